-- Takes a named lock if nobody holds it (SET NX PX) and, in the same atomic step, the next fencing token:
-- max(counter + 1, server time in microseconds), so tokens never go back, not even after the counter
-- was lost (a restart without persistence, a failover, the counter's own ttl, refreshed on every use).
-- KEYS[1] lock  KEYS[2] fence counter  ARGV[1] owner token  ARGV[2] lease (ms)  ARGV[3] ttl of the counter (ms)
-- Returns the fencing token, or 0 when the lock is held.
--! include fence.lua

if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local t = redis.call('TIME')
  return next_fence(KEYS[2], ARGV[3], tonumber(t[1]) * 1000000 + tonumber(t[2]))
end
return 0
