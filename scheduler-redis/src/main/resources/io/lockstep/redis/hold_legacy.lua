-- Holds one job paused for key layout 1's workers (LegacyLayout): its layout 1 pause key, which a
-- layout 1 worker reads before each claim and each start, and its layout 1 running index dropped
-- (the claims its stopped workers handed back unstarted, which it would run whatever the pause).
-- An operator's own layout 1 pause that outlives ours is left as it is (it holds the job anyway,
-- and a rollback finds it as the operator left it).
-- KEYS[1] layout 1 pause key ('<prefix>:{<job>}:paused')  KEYS[2] layout 1 running index
-- ARGV[1] by  ARGV[2] note  ARGV[3] at (ms)  ARGV[4] ttl (ms)
-- Returns 1 when it wrote the pause, 0 when an operator's was left.
redis.call('DEL', KEYS[2])
local by = redis.call('HGET', KEYS[1], 'by')
if by and by ~= ARGV[1] then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl == -1 or ttl >= tonumber(ARGV[4]) then
    return 0
  end
end
redis.call('HSET', KEYS[1], 'note', ARGV[2], 'by', ARGV[1], 'at', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
