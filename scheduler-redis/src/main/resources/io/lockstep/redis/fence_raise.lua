-- Redlock's fencing step: raises a fence counter to a token a quorum agreed on (the highest of the
-- quorum's counters), so that any later majority, which shares a node with this one, hands out a
-- higher token. Never lowers it. With a second key (a slot record held by the token), the record
-- takes the agreed token too, so that history and status show the token the run got.
-- KEYS[1] fence counter (a lock's key; for a job, its group's marks)  KEYS[2] (optional) slot record
-- ARGV[1] owner token  ARGV[2] agreed fencing token  ARGV[3] ttl of the counter (ms)
-- ARGV[4] (a job's) the counter's field in the marks ('<job>:fence'); the marks keep their own ttl
-- Returns 1.
local agreed = tonumber(ARGV[2])
if ARGV[4] then
  if tonumber(redis.call('HGET', KEYS[1], ARGV[4]) or '0') < agreed then
    redis.call('HSET', KEYS[1], ARGV[4], ARGV[2])
    if redis.call('PTTL', KEYS[1]) < 0 then
      redis.call('PEXPIRE', KEYS[1], ARGV[3]) -- a master the claim never reached: the marks are new here
    end
  end
elseif tonumber(redis.call('GET', KEYS[1]) or '0') < agreed then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
if KEYS[2] and redis.call('HGET', KEYS[2], 'token') == ARGV[1] then
  redis.call('HSET', KEYS[2], 'fence', ARGV[2])
end
return 1
