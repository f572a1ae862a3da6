-- Ends a job's backfill in the store: removes the job's backfill mark ('<job>:bf' in its group's
-- marks, see claim.lua) when it still names this backfill, so that no slot is claimed for it any more.
-- KEYS[1] the marks  ARGV[1] the mark's field ('<job>:bf')  ARGV[2] the backfill's id
-- Returns 1 when it removed the mark.
local mark = redis.call('HGET', KEYS[1], ARGV[1])
if mark and string.match(mark, '^(.+):%d+:%d+$') == ARGV[2] then
  redis.call('HDEL', KEYS[1], ARGV[1])
  return 1
end
return 0
