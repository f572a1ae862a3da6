-- Takes a named lock if nobody holds it (SET NX PX) and, in the same atomic step, the next fencing token:
-- max(counter + 1, server time in microseconds), so tokens never go back, not even after the counter
-- was lost (a restart without persistence, a failover, the counter's own ttl, refreshed on every use).
-- KEYS[1] lock  KEYS[2] fence counter  ARGV[1] owner token  ARGV[2] lease (ms)  ARGV[3] ttl of the counter (ms)
-- Returns the fencing token, or 0 when the lock is held.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local t = redis.call('TIME')
  local micros = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local fence = tonumber(redis.call('GET', KEYS[2]) or '0') + 1
  if fence < micros then
    fence = micros
  end
  redis.call('SET', KEYS[2], string.format('%.0f', fence), 'PX', ARGV[3])
  return fence
end
return 0
