-- Extends a lease only if the token still owns it (answers 1 also when the token's run is already done
-- or handed over, see complete.lua); keeps the slot record alive at least two leases
-- and moves the run's entry in the running index (only if it is still there).
-- KEYS[1] lease (an exclusive job's: the marks of its group, see lease.lua)  KEYS[2] slot record
-- KEYS[3] running index  ARGV[1] owner token  ARGV[2] lease ttl (ms)  ARGV[3] slot (epoch ms)
-- ARGV[4] the job's field prefix in the marks ('<job>:') for an exclusive job, '' for a run's own lease key
--! include lease.lua
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local f = ARGV[4] or ''
if lease_owner(KEYS[1], f, now) ~= ARGV[1] then
  -- A renewal that crossed its own run's completion (sent before the outcome landed, run after it)
  -- finds the run done under its token: nothing was lost, nothing to extend.
  local r = redis.call('HMGET', KEYS[2], 'token', 'state', 'handed')
  if r[1] == ARGV[1] and (r[2] == 'done' or r[3] == ARGV[1]) then
    return 1
  end
  return 0
end
local ttl = tonumber(ARGV[2])
lease_extend(KEYS[1], f, ttl, now)
local keep = 2 * ttl
-- An exclusive job's lease lives in its group's marks, whose ttl (7 days) only decisions refresh: a
-- run longer than that, in a group that decides nothing meanwhile, must not lose its lease with them.
if f ~= '' and redis.call('PTTL', KEYS[1]) < keep then
  redis.call('PEXPIRE', KEYS[1], keep)
end
if redis.call('PTTL', KEYS[2]) < keep then
  redis.call('PEXPIRE', KEYS[2], keep)
end
redis.call('ZADD', KEYS[3], 'XX', now + ttl, ARGV[3])
if redis.call('PTTL', KEYS[3]) < keep then
  redis.call('PEXPIRE', KEYS[3], keep)
end
return 1
