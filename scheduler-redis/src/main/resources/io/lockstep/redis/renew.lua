-- Extends a lease only if the token still owns it; keeps the slot record alive at least two leases.
-- KEYS[1] lease   KEYS[2] slot record   ARGV[1] owner token   ARGV[2] lease ttl (ms)
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local keep = 2 * tonumber(ARGV[2])
if redis.call('PTTL', KEYS[2]) < keep then
  redis.call('PEXPIRE', KEYS[2], keep)
end
return 1
