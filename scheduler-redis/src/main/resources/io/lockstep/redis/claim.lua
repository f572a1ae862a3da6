-- Claims one slot of one job, atomically, deciding by the server's clock (never the worker's).
-- KEYS[1] slot record (hash)   KEYS[2] fence counter   KEYS[3] lease
-- ARGV[1] owner token  ARGV[2] slot (epoch ms)  ARGV[3] misfire grace (ms)  ARGV[4] lease ttl (ms)
-- ARGV[5] slot record ttl (ms)  ARGV[6] worker id  ARGV[7] '1' = only record a miss, never claim
-- Returns {status, fencing token, server time ms}; status is claimed|taken|skipped|missed|early.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local token = ARGV[1]
local owner = redis.call('HGET', KEYS[1], 'token')
if owner then
  -- The record decides, not a time window. A repeat of our own claim (its reply was lost) wins again.
  if owner == token and redis.call('HGET', KEYS[1], 'state') == 'running' then
    local lease = redis.call('GET', KEYS[3])
    if lease == false or lease == token then
      redis.call('SET', KEYS[3], token, 'PX', ARGV[4])
      return {'claimed', tonumber(redis.call('HGET', KEYS[1], 'fence')), now}
    end
  end
  return {'taken', 0, now}
end
local slot = tonumber(ARGV[2])
if now < slot then
  return {'early', 0, now}
end
if ARGV[7] == '1' or now > slot + tonumber(ARGV[3]) then
  redis.call('HSET', KEYS[1], 'state', 'missed', 'token', token, 'worker', ARGV[6], 'at', now)
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  return {'missed', 0, now}
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('HSET', KEYS[1], 'state', 'skipped', 'token', token, 'worker', ARGV[6], 'at', now)
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  return {'skipped', 0, now}
end
local fence = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'state', 'running', 'token', token, 'worker', ARGV[6], 'fence', fence, 'at', now)
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('SET', KEYS[3], token, 'PX', ARGV[4])
return {'claimed', fence, now}
