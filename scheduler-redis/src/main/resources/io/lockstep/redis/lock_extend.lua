-- Extends a lock only if the token still owns it. KEYS[1] lock  ARGV[1] owner token  ARGV[2] lease (ms)
-- Returns 1 when it was ours and is extended, 0 otherwise.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
