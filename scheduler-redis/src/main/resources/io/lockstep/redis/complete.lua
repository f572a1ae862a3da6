-- Gives leases back and turns slot records into done markers, each only if the token owns it, and
-- appends each such run to its job's history (a stream of at least the last 'keep' entries).
-- The record is kept (with its ttl), never deleted, so a late worker cannot run the slot again. A
-- run that was replaced, recovered by another worker or abandoned no longer owns its record, so
-- its outcome never overwrites a newer one; a run counts only while it is in the running index.
-- One call may carry many runs (see claim.lua).
-- Per run i (0-based): KEYS[4i+1..4i+4] slot record, lease, running index, history (stream);
-- ARGV[7i+1..7i+7] owner token, outcome, slot (epoch ms), attempts, duration (ms), error, keep.
-- Returns per run 1 when the token still owned the slot, 0 otherwise. Retry-safe: a completion
-- repeated after its reply was lost finds its own done marker and answers 1 again (and adds no
-- second history entry).
local replies = {}
for i = 0, #KEYS / 4 - 1 do
  local record, lease, running, history = KEYS[4 * i + 1], KEYS[4 * i + 2], KEYS[4 * i + 3], KEYS[4 * i + 4]
  local a = 7 * i
  local token, outcome, slot = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  if redis.call('GET', lease) == token then
    redis.call('DEL', lease)
  end
  local r = redis.call('HMGET', record, 'token', 'state', 'worker', 'fence', 'manual')
  if r[1] == token and r[2] == 'done' then
    replies[i + 1] = 1
  elseif r[1] ~= token or r[2] ~= 'running' then
    replies[i + 1] = 0
  elseif redis.call('ZREM', running, slot) == 0 then
    -- Still 'running' under our token but gone from the index: a newer run replaced it (claim.lua,
    -- overlap replace). Its outcome no longer counts; the record says why. (Removing it from the
    -- index is the check: one command where a lookup and a removal were two.)
    redis.call('HSET', record, 'state', 'replaced')
    replies[i + 1] = 0
  else
    redis.call('HSET', record, 'state', 'done', 'outcome', outcome)
    local keep = tonumber(ARGV[a + 7])
    if keep > 0 then
      -- '~': trimmed a whole node at a time (about 100 entries), so at least 'keep' runs stay; exact
      -- trimming costs ~15 us per entry once the stream is full, the approximate one ~2 us.
      redis.call('XADD', history, 'MAXLEN', '~', keep, '*', 'slot', slot, 'worker', r[3] or '', 'outcome', outcome,
          'attempt', ARGV[a + 4], 'token', r[4] or '0', 'durationMs', ARGV[a + 5], 'error', ARGV[a + 6],
          'manual', r[5] or '0')
      redis.call('PEXPIRE', history, 604800000) -- a week after the job's last run
    end
    replies[i + 1] = 1
  end
end
return replies
