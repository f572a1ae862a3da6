-- Starts runs claimed ahead (claim.lua: a staged claim, record 'claimed', a short lease). Its worker
-- asks this just before the slot; only now does the record say 'running' and the lease become the
-- job's full ttl. So a staged claim whose worker died or stalled before this is known never to have
-- started, and a peer may run it (recover.lua). Each start is checked by this server's clock:
--   lost    the token no longer holds the claim (its short lease ran out and a peer took it over);
--   late    the slot's grace passed (the worker stalled after claiming ahead): recorded as missed;
--   paused  the job was paused since the claim: recorded as skipped, as a claim at the slot would be;
--   started the run may start at its slot.
-- One call may carry many runs (see claim.lua). Per run i (0-based): KEYS[6i+1..6i+6] slot record,
-- lease (an exclusive job's: the marks, KEYS[6i+6], see lease.lua), running index, pause, decisions (stream, see claim.lua), the marks of the job's group;
-- ARGV[6i+1..6i+6] owner token, slot (epoch ms), lease ttl (ms), misfire grace (ms), how many
-- entries the decisions keep, the job's field prefix in the marks ('<job>:'). A started run's
-- lease end goes to the marks ('<job>:until'), where a worker that stepped aside for the slot reads
-- when to look for it. (With overlap: allow, a later slot may be the 'holder' by then: its peers
-- then look up to one lease early or late, and each look sets the next.) A slot
-- decided here without a run (late, paused) gets its entry there, as claim.lua's decisions do. Returns per run the status, then this server's clock read last (epoch
-- microseconds): a started run begins (slot - that time) after the reply arrives, never before the
-- slot by this clock, and reading it last makes that as close to the slot as it can be. Retry-safe:
-- a start repeated after its reply was lost gets the same answer.
--
-- Redlock's split (ARGV[#KEYS + 1] = 'no_quorum'; RedlockStore.start): the masters answered a start
-- with no majority (say paused on one live master and started on another, a third down). The run
-- does not start, and its worker reports the slot missed (code no_quorum); so that every master says
-- what that report says (a later majority then finds nothing to recover or run), each run whose
-- record this token still holds, staged or started, is recorded missed (why 'no_quorum') here, as a
-- decision without a run: the lease and the running entry go, the marks close the slot. A record
-- already decided here (late, paused) stays as it is. Per run: 'missed' when the record is (now) so,
-- 'lost' when nothing here is the token's; then the clock, as above. Retry-safe.
--! include lease.lua
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local replies = {}
local split = ARGV[#KEYS + 1] == 'no_quorum'
local function remember(stream, keep, record, slot_text, outcome, reason)
  if tonumber(keep) > 0 then
    local r = redis.call('HMGET', record, 'worker', 'manual')
    redis.call('XADD', stream, 'MAXLEN', '~', keep, '*', 'slot', slot_text, 'worker', r[1] or '', 'outcome', outcome,
        'attempt', '0', 'token', '0', 'durationMs', '0', 'error', '', 'reason', reason, 'manual', r[2] or '0')
    redis.call('PEXPIRE', stream, 604800000)
  end
end
for i = 0, #KEYS / 6 - 1 do
  local record, lease, running, pause, decisions = KEYS[6 * i + 1], KEYS[6 * i + 2], KEYS[6 * i + 3], KEYS[6 * i + 4], KEYS[6 * i + 5]
  local token, slot_text, ttl, grace = ARGV[6 * i + 1], ARGV[6 * i + 2], tonumber(ARGV[6 * i + 3]), tonumber(ARGV[6 * i + 4])
  local keep = ARGV[6 * i + 5]
  local marks, f = KEYS[6 * i + 6], ARGV[6 * i + 6]
  local slot = tonumber(slot_text)
  local lf = lease == marks and f or '' -- an exclusive job's lease is in its marks
  local r = redis.call('HMGET', record, 'token', 'state', 'why')
  local status
  if split then
    if r[1] == token and r[2] == 'missed' and r[3] == 'no_quorum' then
      status = 'missed' -- a repeat
    elseif r[1] == token and (r[2] == 'claimed' or r[2] == 'running') then
      redis.call('HSET', record, 'state', 'missed', 'why', 'no_quorum', 'at', now)
      if lease_owner(lease, lf, now) == token then
        lease_drop(lease, lf)
      end
      redis.call('ZREM', running, slot_text)
      redis.call('HSET', marks, f .. 'closed', slot_text) -- decided without a run: a peer that stepped aside need not look
      remember(decisions, keep, record, slot_text, 'missed', 'no_quorum')
      status = 'missed'
    else
      status = 'lost' -- not the token's here, or decided here already (late, paused): left as it is
    end
  elseif r[1] ~= token then
    status = 'lost'
  elseif r[2] == 'running' then
    status = lease_owner(lease, lf, now) == token and 'started' or 'lost' -- a repeat
  elseif r[2] == 'missed' and r[3] == 'late' then
    status = 'late'
  elseif r[2] == 'skipped' and r[3] == 'paused' then
    status = 'paused'
  elseif r[2] ~= 'claimed' or lease_owner(lease, lf, now) ~= token then
    status = 'lost'
  elseif now > slot + grace then
    redis.call('HSET', record, 'state', 'missed', 'why', 'late', 'at', now)
    lease_drop(lease, lf)
    redis.call('ZREM', running, slot_text)
    redis.call('HSET', marks, f .. 'closed', slot_text) -- decided without a run: a peer that stepped aside need not look
    remember(decisions, keep, record, slot_text, 'missed', 'late')
    status = 'late'
  elseif redis.call('EXISTS', pause) == 1 then
    redis.call('HSET', record, 'state', 'skipped', 'why', 'paused', 'at', now)
    lease_drop(lease, lf)
    redis.call('ZREM', running, slot_text)
    redis.call('HSET', marks, f .. 'closed', slot_text) -- decided without a run: a peer that stepped aside need not look
    remember(decisions, keep, record, slot_text, 'paused', 'paused')
    status = 'paused'
  else
    redis.call('HSET', record, 'state', 'running')
    if lf == '' then
      redis.call('PEXPIRE', lease, ttl)
    end
    redis.call('ZADD', running, 'XX', now + ttl, slot_text)
    -- The marks hash exists (the claim wrote it moments ago), so this never creates it without a ttl.
    -- (An exclusive job's 'until' is its lease: this extends it, lease.lua.)
    if lf ~= '' then
      redis.call('HSET', marks, f .. 'until', string.format('%.0f', now + ttl))
    else
      allow_marks(marks, f, slot_text, now + ttl, now)
    end
    -- The record needs no longer ttl: claim.lua gave it the slot's record ttl (misfire grace plus at
    -- least two leases) counted from the slot, and a start comes within the grace of it, so it
    -- still has two leases ahead; the watchdog's renewals extend it from there (renew.lua).
    status = 'started'
  end
  replies[i + 1] = status
end
local last = redis.call('TIME')
replies[#replies + 1] = tonumber(last[1]) * 1000000 + tonumber(last[2])
return replies
