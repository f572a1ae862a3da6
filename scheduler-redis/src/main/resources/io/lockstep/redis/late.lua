-- Appends to a slot's history the outcome of a run that ended after the slot was no longer its own
-- (complete.lua answered 0: its lease ran out and a peer recovered or abandoned the slot, or a newer
-- run replaced it), marked late (reason 'late'). It changes no decision: the record only notes
-- that this token's outcome is in the history, so that a repeat adds nothing.
-- Per run i (0-based): KEYS[2i+1..2i+2] slot record, history (stream);
-- ARGV[8i+1..8i+8] owner token, outcome, slot (epoch ms), attempts, duration (ms), error, keep,
-- the run's fencing token; ARGV[#ARGV] the worker id.
-- Returns per run 1 when its outcome is in the history, 0 when the slot's record is gone (past its ttl).
local worker = ARGV[#ARGV]
local replies = {}
for i = 0, #KEYS / 2 - 1 do
  local record, history = KEYS[2 * i + 1], KEYS[2 * i + 2]
  local a = 8 * i
  if redis.call('EXISTS', record) == 0 then
    replies[i + 1] = 0
  else
    if redis.call('HSETNX', record, 'late:' .. ARGV[a + 1], ARGV[a + 2]) == 1 and tonumber(ARGV[a + 7]) > 0 then
      redis.call('XADD', history, 'MAXLEN', '~', ARGV[a + 7], '*', 'slot', ARGV[a + 3], 'worker', worker,
          'outcome', ARGV[a + 2], 'attempt', ARGV[a + 4], 'token', ARGV[a + 8], 'durationMs', ARGV[a + 5],
          'error', ARGV[a + 6], 'manual', redis.call('HGET', record, 'manual') or '0', 'reason', 'late')
      redis.call('PEXPIRE', history, 604800000)
    end
    replies[i + 1] = 1
  end
end
return replies
