-- Deals with one slot whose run lost its lease without an outcome: runs it again under a new token
-- and the next fencing token (rerun), or records it as abandoned. Exactly one caller wins.
-- KEYS[1] slot record  KEYS[2] lease (an exclusive job's: the marks, KEYS[4], see lease.lua)  KEYS[3] running index (zset)
-- KEYS[4] the marks of the job's group (hash; '<job>:holder' names the slot whose run took the lease,
-- '<job>:fence' is the job's fence counter, '<job>:turn' the rerun waiting for the lease, see below)  KEYS[5] the job's decisions (stream, see claim.lua)
-- ARGV[1] new owner token  ARGV[2] slot (epoch ms)  ARGV[3] lease ttl (ms)  ARGV[4] slot record ttl (ms)
-- ARGV[5] worker id  ARGV[6] rerun | abandon  ARGV[7] ttl of the marks (ms)  ARGV[8] misfire grace (ms)
-- ARGV[9] how many entries the decisions keep (0: none)  ARGV[10] the job's field prefix in the marks ('<job>:')
-- Each decision goes to the decisions stream: recovered (the rerun: its worker and new token, and in
-- 'error' the run it replaced), abandoned (the dead run's worker and token), missed (not_started).
-- Returns {status, fencing token, server time ms, earliest lease end among the job's runs in flight
-- (server ms, 0 if none), for a rerun claimed why the run before it ended (not_started | handed_over |
-- lease_lost, as its 'recovered' decision says), else ''}; status is claimed|abandoned|missed|early|taken|busy. Retry-safe: a request
-- repeated with the same token (its reply was lost) gets the same decision.
--
-- A run that never started is always safe to run, whatever the policy: a staged claim (record
-- 'claimed', see claim.lua) whose short lease ran out, or a run its worker handed back unstarted
-- (complete.lua). It is run here within the slot's grace, and recorded as missed past it. A run
-- its worker handed over (complete.lua: lease lost or interrupted under recover: rerun) is an
-- ordinary dead run: its entry in the running index is already expired.
--
-- Redlock: before it changes the record, the call keeps what it found there ('undo', and 'undo_by'
-- naming its token), so that a recovery that wins no majority can be given back (unclaim.lua,
-- mode 'recovery'): the dead run is then as it was on this master, free for the next recovery,
-- and nothing of this token holds the job's lease.
--
-- A rerun refused 'busy' (another run of the job holds its exclusive lease) takes the job's next
-- turn: '<job>:turn' = '<slot>:<until>' in the marks. Until then, a claim of a later slot that finds
-- the lease free is skipped under overlap: skip (claim.lua), as it would be behind a run, and a
-- rerun of a later slot waits too; so a rerun behind a frequent job's back-to-back runs gets in at
-- the first gap, and its workers can ask less often (Claimer: every 250 ms doubling to 2 s). Each
-- ask holds the turn TURN_HOLD more, so the turn lapses 5 s after its rerun stopped asking (its
-- worker died, or the rerun was decided elsewhere). The earliest waiting slot holds the turn.
local TURN_HOLD = 5000
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local micros = tonumber(t[1]) * 1000000 + tonumber(t[2])

--! include fence.lua
--! include lease.lua
local lf = KEYS[2] == KEYS[4] and ARGV[10] or '' -- an exclusive job's lease is in its marks
-- The marks' 'holder' and 'until' for this rerun (an exclusive one's 'until' was written with its lease by lease_take).
local function set_holder(ends)
  if lf ~= '' then
    redis.call('HSET', KEYS[4], lf .. 'holder', ARGV[2])
  else
    allow_marks(KEYS[4], ARGV[10], ARGV[2], ends, now)
  end
end

local function remember(worker, outcome, token, reason, replaced)
  if tonumber(ARGV[9]) > 0 then
    redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[9], '*', 'slot', ARGV[2], 'worker', worker, 'outcome', outcome,
        'attempt', '0', 'token', token, 'durationMs', '0', 'error', replaced, 'reason', reason,
        'manual', redis.call('HGET', KEYS[1], 'manual') or '0')
    redis.call('PEXPIRE', KEYS[5], 604800000)
  end
end

local function reply(status, fence, why)
  local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  return {status, fence, now, tonumber(first[2] or '0'), why or ''}
end
local turn_field = ARGV[10] .. 'turn'
local turn = redis.call('HGET', KEYS[4], turn_field)
local turn_slot, turn_until = string.match(turn or '', '^(%d+):(%d+)$')
local slot = tonumber(ARGV[2])
local turn_held = turn_slot and tonumber(turn_until) > now and tonumber(turn_slot) ~= slot
-- This slot is decided here without a rerun: a turn it held is given up (not left to lapse).
local function leave_turn()
  if turn_slot and tonumber(turn_slot) == slot then
    redis.call('HDEL', KEYS[4], turn_field)
  end
end
local mine = redis.call('HMGET', KEYS[1], 'state', 'token', 'fence', 'abandoned_token')
if mine[1] == 'running' and mine[2] == ARGV[1] then
  local lease = lease_owner(KEYS[2], lf, now)
  if lease == false or lease == ARGV[1] then
    lease_take(KEYS[2], lf, ARGV[1], tonumber(ARGV[3]), now)
    redis.call('ZADD', KEYS[3], now + tonumber(ARGV[3]), ARGV[2])
    set_holder(now + tonumber(ARGV[3]))
    return reply('claimed', tonumber(mine[3]))
  end
  return reply('taken', 0)
elseif mine[1] == 'abandoned' and mine[4] == ARGV[1] then
  return reply('abandoned', tonumber(mine[3]))
elseif mine[1] == 'missed' and mine[2] == ARGV[1] then
  return reply('missed', 0)
end
local score = redis.call('ZSCORE', KEYS[3], ARGV[2])
if not score or tonumber(score) > now - 2 then -- expired 2 ms past its score, as runs.lua counts it
  leave_turn()
  return reply('taken', 0) -- renewed, finished, or already dealt with
end
local record = redis.call('HMGET', KEYS[1], 'state', 'token', 'fence', 'worker', 'handed', 'outcome', 'origin')
if record[1] ~= 'running' and record[1] ~= 'claimed' then
  redis.call('ZREM', KEYS[3], ARGV[2])
  leave_turn()
  return reply('taken', 0)
end
local holder = lease_owner(KEYS[2], lf, now)
if holder == record[2] then
  leave_turn()
  return reply('taken', 0) -- the run's lease is still alive
end
local unstarted = record[1] == 'claimed'
local function keep_undo()
  local why = redis.call('HGET', KEYS[1], 'why') or ''
  redis.call('HSET', KEYS[1], 'undo_by', ARGV[1],
      'undo', cjson.encode({record[1], record[2] or '', record[3] or '0', record[4] or '', score, why}))
end
if unstarted and now < tonumber(ARGV[2]) then
  return reply('early', 0) -- handed back before its slot: it may run, but never before the slot
end
-- (A backfill's slot is past its grace by design: handed back unstarted, it is run again whenever.)
if unstarted and now > tonumber(ARGV[2]) + tonumber(ARGV[8]) and record[7] ~= 'backfill' then
  keep_undo()
  redis.call('HSET', KEYS[1], 'state', 'missed', 'why', 'not_started', 'token', ARGV[1], 'at', now)
  redis.call('HSET', KEYS[4], ARGV[10] .. 'closed', ARGV[2]) -- nothing of it in flight
  leave_turn()
  redis.call('ZREM', KEYS[3], ARGV[2])
  remember(ARGV[5], 'missed', '0', 'not_started', '')
  return reply('missed', 0)
end
if ARGV[6] == 'abandon' and not unstarted then
  keep_undo()
  redis.call('HSET', KEYS[1], 'state', 'abandoned', 'abandoned_by', ARGV[5], 'abandoned_token', ARGV[1], 'at', now)
  redis.call('HSET', KEYS[4], ARGV[10] .. 'closed', ARGV[2]) -- nothing of it in flight
  leave_turn()
  redis.call('ZREM', KEYS[3], ARGV[2])
  remember(record[4] or '', 'abandoned', record[3] or '0', 'lease_lost', '')
  return reply('abandoned', tonumber(record[3]))
end
if holder or (turn_held and tonumber(turn_slot) < slot) then
  -- Another run of the job holds the exclusive lease (or an earlier rerun waits for it): take the
  -- next turn, unless an earlier slot's rerun holds it.
  if not turn_held or tonumber(turn_slot) > slot then
    redis.call('HSET', KEYS[4], turn_field, ARGV[2] .. ':' .. string.format('%.0f', now + TURN_HOLD))
  end
  return reply('busy', 0)
end
leave_turn() -- ours: this rerun takes the lease now
keep_undo()
local fence = next_fence_after(redis.call('HGET', KEYS[4], ARGV[10] .. 'fence'), micros)
redis.call('HSET', KEYS[4], ARGV[10] .. 'fence', string.format('%.0f', fence))
redis.call('HSET', KEYS[1], 'state', 'running', 'token', ARGV[1], 'worker', ARGV[5], 'fence', fence, 'at', now)
redis.call('HINCRBY', KEYS[1], 'recoveries', 1)
-- Why: it never started; its worker's stop cut it off and handed it over (complete.lua's 'handed', with
-- outcome 'interrupted': an orderly hand-over, not a death); or its lease was lost (its worker died or
-- stalled, or handed over a run whose lease it had lost: outcome 'lease_lost').
local why = unstarted and 'not_started' or ((record[5] == record[2] and record[6] == 'interrupted') and 'handed_over' or 'lease_lost')
remember(ARGV[5], 'recovered', string.format('%.0f', fence), why,
    (unstarted and 'claim' or 'run') .. ' of ' .. (record[4] or '?') .. ' (token ' .. (record[3] or '0') .. ')')
-- Only ever lengthens the record's life (by this worker's ttl, from now): the shortest ttl the
-- claims kept (claim.lua's '<job>:kept') stays a lower bound of it, so no 'kept' is written here.
-- A record that is gone is never written back above: no score or no record answers 'taken'.
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[4]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
local ttl = tonumber(ARGV[3])
lease_take(KEYS[2], lf, ARGV[1], ttl, now)
redis.call('ZADD', KEYS[3], now + ttl, ARGV[2])
set_holder(now + ttl)
if redis.call('PTTL', KEYS[4]) < tonumber(ARGV[7]) then
  redis.call('PEXPIRE', KEYS[4], ARGV[7])
end
return reply('claimed', fence, why)
