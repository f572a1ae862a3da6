-- Redlock's fencing step: raises a fence counter to a token a quorum agreed on (the highest of the
-- quorum's counters), so that any later majority, which shares a node with this one, hands out a
-- higher token. Never lowers it. With a second key (a slot record held by the token), the record
-- takes the agreed token too, so that history and status show the token the run got.
-- KEYS[1] fence counter  KEYS[2] (optional) slot record
-- ARGV[1] owner token  ARGV[2] agreed fencing token  ARGV[3] ttl of the counter (ms)
-- Returns 1.
local agreed = tonumber(ARGV[2])
if tonumber(redis.call('GET', KEYS[1]) or '0') < agreed then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
if KEYS[2] and redis.call('HGET', KEYS[2], 'token') == ARGV[1] then
  redis.call('HSET', KEYS[2], 'fence', ARGV[2])
end
return 1
