-- Takes a named lock if nobody holds it (SET NX PX) and, in the same atomic step, the next fencing token.
-- KEYS[1] lock  KEYS[2] fence counter  ARGV[1] owner token  ARGV[2] lease (ms)
-- Returns the fencing token, or 0 when the lock is held.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return 0
