-- Gives leases back and turns slot records into done markers, each only if the token owns it.
-- The record is kept (with its ttl), never deleted, so a late worker cannot run the slot again. A
-- run that was replaced, recovered by another worker or abandoned no longer owns its record, so
-- its outcome never overwrites a newer one; a run counts only while it is in the running index.
-- One call may carry many runs (see claim.lua).
-- Per run i (0-based): KEYS[3i+1..3i+3] slot record, lease, running index;
-- ARGV[3i+1..3i+3] owner token, outcome, slot (epoch ms).
-- Returns per run 1 when the token still owned the slot, 0 otherwise. Retry-safe: a completion
-- repeated after its reply was lost finds its own done marker and answers 1 again.
local replies = {}
for i = 0, #KEYS / 3 - 1 do
  local record, lease, running = KEYS[3 * i + 1], KEYS[3 * i + 2], KEYS[3 * i + 3]
  local token = ARGV[3 * i + 1]
  if redis.call('GET', lease) == token then
    redis.call('DEL', lease)
  end
  local r = redis.call('HMGET', record, 'token', 'state')
  if r[1] == token and r[2] == 'done' then
    replies[i + 1] = 1
  elseif r[1] ~= token or r[2] ~= 'running' then
    replies[i + 1] = 0
  elseif not redis.call('ZSCORE', running, ARGV[3 * i + 3]) then
    -- Still 'running' under our token but gone from the index: a newer run replaced it (claim.lua,
    -- overlap replace). Its outcome no longer counts; the record says why.
    redis.call('HSET', record, 'state', 'replaced')
    replies[i + 1] = 0
  else
    redis.call('HSET', record, 'state', 'done', 'outcome', ARGV[3 * i + 2])
    redis.call('ZREM', running, ARGV[3 * i + 3])
    replies[i + 1] = 1
  end
end
return replies
