-- A verdict of expect.lua was logged ('logged': a worker that takes it over later does not log it
-- again) or delivered ('delivered': it leaves the outbox and the state).
-- KEYS[1] state (hash)  KEYS[2] outbox (zset)  ARGV[1] verdict id  ARGV[2] 'logged' or 'delivered'
if ARGV[2] == 'logged' then
  if redis.call('HEXISTS', KEYS[1], 'n:' .. ARGV[1]) == 1 then
    redis.call('HSET', KEYS[1], 'l:' .. ARGV[1], '1')
  end
  return 1
end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[1], 'n:' .. ARGV[1], 'l:' .. ARGV[1])
return 1
