-- Ends a job's backfill in the store (its driver's last progress, or a cancel): removes the job's
-- backfill mark ('<job>:bf' = '<id>:<cursor>:<to>' in its group's marks, see claim.lua) when it
-- names this backfill, so that no slot is claimed for it any more, and the set of its range's slots
-- decided when it was asked for. Its last run's token ('<job>:bftoken') stays: that run may still
-- hold the lease, and a scheduled slot must still wait for it (a token never matches another run).
-- KEYS[1] the marks  KEYS[2] the backfill's decided set
-- ARGV[1] the job's field prefix in the marks ('<job>:')  ARGV[2] the backfill's id
-- Returns 1 when the mark named it (and is gone), else 0.
local mark = redis.call('HGET', KEYS[1], ARGV[1] .. 'bf')
if mark and string.match(mark, '^(.+):%d+:%d+$') == ARGV[2] then
  redis.call('HDEL', KEYS[1], ARGV[1] .. 'bf')
  redis.call('DEL', KEYS[2])
  return 1
end
return 0
