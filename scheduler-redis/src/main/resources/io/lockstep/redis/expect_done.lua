-- What became of a verdict of expect.lua that this worker holds:
--   'logged': its event was written (a worker that takes it over later does not log it again);
--   'sending': its delivery begins or goes on: the lease is extended, only while this worker still
--     holds it (0: another worker took it over; do not send it);
--   'delivered': it leaves the outbox and the state.
-- KEYS[1] state (hash)  KEYS[2] outbox (zset)  ARGV[1] verdict id  ARGV[2] what  ARGV[3] worker  ARGV[4] lease (ms)
local id = ARGV[1]
if ARGV[2] == 'logged' then
  if redis.call('HGET', KEYS[1], 'n:' .. id) then
    redis.call('HSET', KEYS[1], 'l:' .. id, '1')
  end
  return 1
end
if ARGV[2] == 'sending' then
  if not redis.call('HGET', KEYS[1], 'n:' .. id) or redis.call('HGET', KEYS[1], 'o:' .. id) ~= ARGV[3] then
    return 0
  end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), id)
  return 1
end
redis.call('ZREM', KEYS[2], id)
redis.call('HDEL', KEYS[1], 'n:' .. id, 'l:' .. id, 'o:' .. id)
return 1
