-- Redlock: gives back what a request that did not reach a quorum wrote on one node, so that the
-- slot can be decided again. The marks (watermarks) stay; they only ever move forward.
-- KEYS[1] slot record  KEYS[2] the job's lease (an exclusive job's: the marks, KEYS[4], see lease.lua)  KEYS[3] running index  KEYS[4] the marks of the job's group
-- ARGV[1] owner token  ARGV[2] slot (epoch ms)  ARGV[3] all | running | recovery | recovery-taken | recovery:<state>
-- ARGV[4] the job's field prefix in the marks ('<job>:')
--
-- A claim (all, running): the slot record while this token owns it (all: in any state but done;
-- running: only while running or claimed, so a decision a quorum made stays), the lease (only if
-- this token holds it) and the slot's entry in the running index. A claim that revoked a run
-- (overlap: replace, see claim.lua's 'revoked') gives that run its lease and its running entry
-- back, and the marks' 'holder' names it again, so that a replace no majority agreed to interrupts
-- nothing. (Should that run have finished meanwhile, its lease here lives on until its old end:
-- a minority's disagreement, bounded by one lease, that the majority outvotes.)
--
-- A recovery (recover.lua's 'undo'): the dead run's record as the recovery found it, and its
-- expired running entry, so that it is recovered again; this token's lease goes. With
-- 'recovery:<state>' a record this token left in <state> stays (that decision had its majority);
-- with 'recovery-taken' (another recoverer won the slot) the entry goes instead.
-- Returns 1 when something of this token's was given back, 0 otherwise.
--! include lease.lua
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local mode = ARGV[3]
local lf = KEYS[2] == KEYS[4] and ARGV[4] or '' -- an exclusive job's lease is in its marks
local released = 0

if mode:sub(1, 8) == 'recovery' then
  local r = redis.call('HMGET', KEYS[1], 'undo_by', 'undo', 'state')
  if r[1] == ARGV[1] and r[2] and r[3] ~= mode:sub(10) then
    local u = cjson.decode(r[2])
    redis.call('HDEL', KEYS[1], 'undo_by', 'undo', 'why', 'abandoned_by', 'abandoned_token')
    redis.call('HSET', KEYS[1], 'state', u[1], 'token', u[2], 'fence', u[3], 'worker', u[4])
    if u[6] ~= '' then
      redis.call('HSET', KEYS[1], 'why', u[6])
    end
    if mode == 'recovery-taken' then
      redis.call('ZREM', KEYS[3], ARGV[2]) -- another recoverer won: no dead run to find here
    else
      redis.call('ZADD', KEYS[3], u[5], ARGV[2])
    end
    released = 1
  end
  if lease_owner(KEYS[2], lf, now) == ARGV[1] then
    lease_drop(KEYS[2], lf)
    released = 1
  end
  return released
end

local r = redis.call('HMGET', KEYS[1], 'token', 'state', 'revoked')
local ours = r[1] == ARGV[1] and r[2] ~= 'done' and (mode == 'all' or r[2] == 'running' or r[2] == 'claimed')
if ours and r[3] and lease_owner(KEYS[2], lf, now) == ARGV[1] then
  -- {slot of the revoked run, its token, its lease end (server ms), its running entry's score}
  local v = cjson.decode(r[3])
  redis.call('ZREM', KEYS[3], ARGV[2])
  redis.call('ZADD', KEYS[3], v[4], v[1])
  if redis.call('HGET', KEYS[4], ARGV[4] .. 'holder') == ARGV[2] then
    redis.call('HSET', KEYS[4], ARGV[4] .. 'holder', v[1])
  end
  if v[3] > now then
    lease_take(KEYS[2], lf, v[2], v[3] - now, now)
  else
    lease_drop(KEYS[2], lf)
  end
  redis.call('DEL', KEYS[1])
  return 1
end
if ours then
  redis.call('DEL', KEYS[1])
  released = 1
end
if lease_owner(KEYS[2], lf, now) == ARGV[1] then
  lease_drop(KEYS[2], lf)
  redis.call('ZREM', KEYS[3], ARGV[2])
  released = 1
elseif released == 1 then
  redis.call('ZREM', KEYS[3], ARGV[2])
end
return released
