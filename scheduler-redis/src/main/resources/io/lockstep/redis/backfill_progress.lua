-- Writes a backfill's progress ('<job>:progress' in the backfills hash) for `status` and the CLI,
-- unless the job's request there is another backfill's (a newer one replaced it), or this
-- backfill's progress there already says it ended (a second driver, stalled, must not turn a done
-- backfill back into a running or cancelled one).
-- KEYS[1] the backfills (hash)  ARGV[1] the job  ARGV[2] the backfill's id  ARGV[3] the progress (JSON)
-- ARGV[4] the hash's ttl (ms)
-- Returns 1 when written, 0 when not.
local request = redis.call('HGET', KEYS[1], ARGV[1])
if not request or cjson.decode(request).id ~= ARGV[2] then
  return 0
end
local current = redis.call('HGET', KEYS[1], ARGV[1] .. ':progress')
if current then
  local c = cjson.decode(current)
  if c.id == ARGV[2] and c.state ~= 'running' then
    return 0
  end
end
redis.call('HSET', KEYS[1], ARGV[1] .. ':progress', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
