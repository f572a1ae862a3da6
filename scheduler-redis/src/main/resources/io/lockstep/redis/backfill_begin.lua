-- Begins a backfill in the store: sets the job's backfill mark ('<job>:bf' = '<id>:0:<to>' in its group's
-- marks, see claim.lua) unless the job has one, which a running backfill holds until it ends or is
-- cancelled. One backfill per job at a time: two operators who ask at once get one each way.
-- KEYS[1] the marks  ARGV[1] the mark's field ('<job>:bf')  ARGV[2] the backfill's id
-- ARGV[3] the marks' ttl when they have none yet (ms)  ARGV[4] the range's last slot (ms)
-- Returns '' when it set the mark, else the mark that holds it.
local mark = redis.call('HGET', KEYS[1], ARGV[1])
if mark then
  return mark
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ':0:' .. ARGV[4])
if redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return ''
