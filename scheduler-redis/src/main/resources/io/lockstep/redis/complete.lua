-- Gives leases back and turns slot records into done markers, each only if the token owns it, and
-- appends each such run to its job's history (a stream of at least the last 'keep' entries).
-- The record is kept (with its ttl), never deleted, so a late worker cannot run the slot again. A
-- run that was replaced, recovered by another worker or abandoned no longer owns its record, so
-- its outcome never overwrites a newer one; a run counts only while it is in the running index.
-- One call may carry many runs (see claim.lua).
-- Per run i (0-based): KEYS[5i+1..5i+5] slot record, lease (an exclusive job's: the marks of its
-- group, see lease.lua), running index, history (stream), the marks of the job's group; ARGV[10i+1..10i+10] owner token, outcome, slot (epoch ms), attempts, duration (ms), error, keep,
-- hand-over ('' | 'rerun' | 'unstarted'), the run's fencing token for the history ('0': the record's;
-- on Redlock a master that missed the token's raise holds its own, so every master is told the one
-- the run had, and the run shows once in a merged history), the job's field prefix in the marks ('<job>:').
-- A run that ended (not handed over) leaves its slot as the job's '<job>:closed' mark, so that a worker
-- that stepped aside for the slot knows from the marks alone that no run of it is in flight. (The
-- marks exist: every decision of the group refreshes their ttl of 7 days; only a run that outlived
-- a week without another decision in its group writes them back here without one, until the next.)
-- A hand-over leaves the slot to a peer instead of closing it: 'rerun' (the run lost its lease or
-- was cut off by its worker's stop, under recover: rerun) keeps the record 'running' with its entry
-- in the running index expired now, so that recover.lua reruns it at the next look; 'unstarted'
-- (the run never started) turns the record back into a staged claim ('claimed'), which recover.lua
-- runs whatever the policy within the slot's grace. Either way the outcome goes to the history.
-- Returns per run 1 when the token still owned the slot, 0 otherwise. Retry-safe: a completion
-- repeated after its reply was lost finds its own done marker (or hand-over) and answers 1 again
-- (and adds no second history entry).
--! include lease.lua
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local replies = {}
for i = 0, #KEYS / 5 - 1 do
  local record, lease, running, history = KEYS[5 * i + 1], KEYS[5 * i + 2], KEYS[5 * i + 3], KEYS[5 * i + 4]
  local a = 10 * i
  local token, outcome, slot, hand = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 8]
  local marks, f = KEYS[5 * i + 5], ARGV[a + 10]
  -- The lease goes back if this token holds it. An exclusive job's, in the marks, goes in the HSET
  -- that closes the slot when the run ended (below), else here.
  local owned = false
  if lease ~= marks then
    if redis.call('GET', lease) == token then
      redis.call('DEL', lease)
    end
  else
    owned = redis.call('HGET', marks, f .. 'owner') == token
  end
  local r = redis.call('HMGET', record, 'token', 'state', 'worker', 'fence', 'manual', 'handed', 'origin')
  if r[1] == token and (r[2] == 'done' or r[6] == token) then
    replies[i + 1] = 1
  elseif r[1] ~= token or (r[2] ~= 'running' and r[2] ~= 'claimed') then
    replies[i + 1] = 0
  elseif (hand == '' and redis.call('ZREM', running, slot) == 0)
      or (hand ~= '' and not redis.call('ZSCORE', running, slot)) then
    -- Still ours but gone from the index: a newer run replaced it (claim.lua, overlap replace).
    -- Its outcome no longer counts; the record says why. (Removing it from the index is the check:
    -- one command where a lookup and a removal were two.)
    redis.call('HSET', record, 'state', 'replaced')
    replies[i + 1] = 0
  else
    if hand == '' then
      redis.call('HSET', record, 'state', 'done', 'outcome', outcome)
      if owned then
        redis.call('HSET', marks, f .. 'closed', slot, f .. 'owner', '') -- closed, and the lease given back
        owned = false
      else
        redis.call('HSET', marks, f .. 'closed', slot)
      end
    else
      redis.call('ZADD', running, now - 2, slot) -- expired now (runs.lua's 2 ms margin): the next look hands it to a peer
      redis.call('HSET', record, 'state', hand == 'unstarted' and 'claimed' or 'running', 'handed', token,
          'outcome', outcome)
    end
    local keep = tonumber(ARGV[a + 7])
    if keep > 0 then
      -- '~': trimmed a whole node at a time (about 100 entries), so at least 'keep' runs stay; exact
      -- trimming costs ~15 us per entry once the stream is full, the approximate one ~2 us.
      local entry = {'slot', slot, 'worker', r[3] or '', 'outcome', outcome, 'attempt', ARGV[a + 4],
          'token', ARGV[a + 9] ~= '0' and ARGV[a + 9] or r[4] or '0', 'durationMs', ARGV[a + 5], 'error', ARGV[a + 6], 'manual', r[5] or '0'}
      if r[7] then
        entry[#entry + 1] = 'origin' -- a backfill's run (claim.lua)
        entry[#entry + 1] = r[7]
      end
      redis.call('XADD', history, 'MAXLEN', '~', keep, '*', unpack(entry))
      redis.call('PEXPIRE', history, 604800000) -- a week after the job's last run
    end
    replies[i + 1] = 1
  end
  if owned then
    lease_drop(marks, f)
  end
end
return replies
