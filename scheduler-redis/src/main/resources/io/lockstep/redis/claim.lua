-- Decides one slot of one job, atomically, by the server's clock (never the worker's).
-- KEYS[1] slot record (hash)  KEYS[2] fence counter  KEYS[3] lease  KEYS[4] running index (zset)
-- KEYS[5] last decided slot
-- ARGV[1] owner token  ARGV[2] slot (epoch ms)  ARGV[3] misfire grace (ms)  ARGV[4] lease ttl (ms)
-- ARGV[5] slot record ttl (ms)  ARGV[6] worker id  ARGV[7] mode: claim | miss | catchup
-- ARGV[8] '1' = overlap replace  ARGV[9] ttl of the last-slot marker (ms)
-- Returns {status, fencing token, server time ms, earliest lease end among the job's runs in flight
-- (server ms, 0 if none)}; status is claimed|taken|skipped|missed|early|busy. The last element lets
-- every worker that races a slot know when to look for a run that died, without polling.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local token, mode, ttl = ARGV[1], ARGV[7], tonumber(ARGV[4])

local function reply(status, fence)
  local first = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
  return {status, fence, now, tonumber(first[2] or '0')}
end

local function take_lease()
  redis.call('SET', KEYS[3], token, 'PX', ttl)
  redis.call('ZADD', KEYS[4], now + ttl, ARGV[2])
  if redis.call('PTTL', KEYS[4]) < tonumber(ARGV[5]) then
    redis.call('PEXPIRE', KEYS[4], ARGV[5])
  end
end

local owner = redis.call('HGET', KEYS[1], 'token')
if owner then
  -- The record decides, not a time window. A repeat of our own claim (its reply was lost) wins again.
  if owner == token and redis.call('HGET', KEYS[1], 'state') == 'running' then
    local lease = redis.call('GET', KEYS[3])
    if lease == false or lease == token then
      take_lease()
      return reply('claimed', tonumber(redis.call('HGET', KEYS[1], 'fence')))
    end
  end
  return reply('taken', 0)
end
local slot = tonumber(ARGV[2])
if now < slot then
  return reply('early', 0)
end

local function decide(state, fence)
  redis.call('HSET', KEYS[1], 'state', state, 'token', token, 'worker', ARGV[6], 'fence', fence, 'at', now)
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  local last = tonumber(redis.call('GET', KEYS[5]) or '0')
  if slot > last then
    redis.call('SET', KEYS[5], ARGV[2], 'PX', ARGV[9])
  end
end

if mode == 'miss' or (mode == 'claim' and now > slot + tonumber(ARGV[3])) then
  decide('missed', 0)
  return reply('missed', 0)
end
local holder = redis.call('GET', KEYS[3])
if holder then
  if mode == 'catchup' then
    return reply('busy', 0)
  end
  if ARGV[8] ~= '1' then
    decide('skipped', 0)
    return reply('skipped', 0)
  end
  -- overlap: replace. Revoke the run holding the lease: its renewal now fails, so its worker is
  -- told, and its record no longer counts as running (its outcome can no longer be written).
  local base = string.sub(KEYS[1], 1, #KEYS[1] - #ARGV[2])
  for _, member in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
    local key = base .. member
    if redis.call('HGET', key, 'token') == holder then
      redis.call('HSET', key, 'state', 'replaced', 'replaced_by', token)
      redis.call('ZREM', KEYS[4], member)
    end
  end
end
local fence = redis.call('INCR', KEYS[2])
decide('running', fence)
take_lease()
return reply('claimed', fence)
