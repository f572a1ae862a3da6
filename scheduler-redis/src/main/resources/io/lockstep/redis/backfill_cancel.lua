-- Flags a job's backfill request cancelled, if the request there is still this backfill's (a newer
-- request may have replaced it since the caller read it).
-- KEYS[1] the backfills (hash)  ARGV[1] the job  ARGV[2] the backfill's id
-- Returns 1 when flagged (or already), 0 when the request is another's or gone.
local request = redis.call('HGET', KEYS[1], ARGV[1])
if not request then
  return 0
end
local r = cjson.decode(request)
if r.id ~= ARGV[2] then
  return 0
end
r.cancelled = true
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(r))
return 1
