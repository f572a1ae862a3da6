-- Decides slots, each atomically, by the server's clock (never the worker's). One call may carry
-- many slots (of jobs in the same hash slot on Redis Cluster; of any jobs on a standalone server):
-- the script's own cost is then paid once per batch instead of once per slot.
-- Per slot i (0-based), 6 keys from KEYS[6i+1]:
--   slot record (hash), lease (an exclusive job's: the marks of its group, see lease.lua), running
--   index (zset), the marks of the job's group (hash; the job's
--   fields are '<job>:' then decided, started, holder = the slot whose run last took the lease,
--   until = when that claim's lease ends, owner = the token holding an exclusive job's lease (with
--   until, the lease itself: lease.lua), fence = the job's fence counter, see fence.lua,
--   kept / mkept = the shortest record ttl a claim of a scheduled / manual slot wrote, see below,
--   turn = '<slot>:<until>', a rerun of an earlier slot waiting for the lease, see recover.lua),
--   pause (hash; exists while the job is paused),
--   decisions (stream: the job's slots decided without a run, beside its history of runs, which
--   complete.lua writes; apart, so that a long pause cannot push the runs out)
-- and 15 arguments from ARGV[15i+1]:
--   owner token, slot (epoch ms), misfire grace (ms), lease ttl (ms), slot record ttl (ms),
--   worker id, mode (claim | miss | miss:<code> | skip:<reason> | catchup), '1' = overlap replace, ttl of the marks and the fence (ms),
--   '1' = a manual run ('b:<id>': a slot of backfill <id>, see below), how long before the slot it may be claimed (ms; see 'ahead' below),
--   how long past its slot the short lease of a claim made ahead lives (ms), how many entries the
--   decisions stream keeps (history.keep; 0: none), the job's field prefix in the marks ('<job>:'),
--   the start window (ms; see 'A claim made ahead' below)
-- A slot decided without a run (missed, skipped, paused) gets an entry there, as a run's outcome
-- gets one in the history: outcome missed | skipped | paused, and 'reason' (late: past misfireGrace by this server's
-- clock; reported, or the code of its worker's slot_missed event (outage, no_thread, ...): its
-- worker reported it missed; order: a later slot
-- already started; disowned: its claim's reply never came and its worker gave up on it; overlap:
-- the job's previous run still held the lease; paused; or a 'skip:<reason>' request's reason, such
-- as calendar: the job's calendars exclude the slot, which is then decided skipped at its time).
-- Returns per slot {status, fencing token, server time ms when the call ends (a claim made ahead
-- starts its run that long before the slot after the reply arrives: the later this time, the closer
-- to the slot; see ClaimResult.startDelayMillis), earliest lease end among the job's runs
-- in flight (server ms, 0 if none), for 'taken' the token whose record holds the slot (else ''),
-- and 1 when a 'claimed' is the run's start, 0 when it is staged (see below)};
-- status is claimed|taken|skipped|paused|missed|superseded|stale|early|busy. (Redlock counts a
-- 'taken' only when a majority of its masters name the same token.)
-- A manual slot (a `trigger`: its slot is the request's time) is decided like any other, but
-- neither reads nor moves the job's order ('decided', 'started'), and runs even while the job is paused.
-- A backfill's slot ('b:<id>', mode catchup: `lockstep backfill`) is a slot of the job's schedule
-- claimed like a catch-up (no grace; 'busy' while a run holds the job's lease or the job is
-- paused), outside the job's order (it never reads or moves 'started', and no later slot makes it
-- 'superseded'), and never refused 'stale': what was decided of the range when the backfill was
-- asked for is known to its driver (BackfillView), and from then on nobody else decides a slot of it.
-- The job's backfill mark '<job>:bf' = '<id>:<cursor>:<to>' in the marks says so: a slot of the range
-- ('to' is at least misfireGrace in the past when the backfill is asked for: no scheduled claim of
-- it can still start) later than the cursor and with no record is 'stale' to every other request
-- (a catch-up, a late claim or miss, a calendar's skip); a backfill's claim is taken only for the
-- backfill the mark names (a cancelled one has none) and only past its cursor, which each claim moves
-- to its slot. So the backfill's slots start in order, each once, whichever worker drives it and
-- however long ago an earlier claim's record expired. Its record says origin 'backfill', and so does
-- its history. Its run never costs the schedule a slot: a scheduled claim that finds it holding the
-- lease ('<job>:bftoken' names its token) is answered 'busy' and asks again within its grace.
-- The last element lets every worker that races a slot know when to look for a run that died,
-- without polling.
--
-- Every answer is retry-safe: a request repeated with the same token (its reply was lost) gets the
-- same decision. The marks are two watermarks that outlive the slot records: 'decided', the latest
-- slot the cluster decided, and 'started', the latest slot that started a run. A slot older than
-- 'started' is never started (slots start in order); a slot with no record, no later than
-- 'decided' and old enough that its record may have expired is refused ('stale'): its decision can
-- no longer be known, so it is neither run nor reported again.
-- "Old enough" is judged by the shortest record ttl any claim of the job wrote, not by the
-- claimant's own: workers of two configs (a rollout that changed misfireGrace or lease) write
-- records of different ttls, and a claimant with a longer one would otherwise take a slot whose
-- shorter-lived record expired for undecided, and run it again. Each call that writes a record
-- keeps its ttl in the marks when it is the shortest so far ('<job>:kept'; '<job>:mkept' for
-- manual runs, which never move 'decided': a manual slot with no record older than that is stale
-- too). A record of slot S lives until S + its writer's ttl at least, so a decided slot whose
-- record is gone is always past S + kept. The marks are read anyway, and written in the same HSET
-- as 'decided': the common path costs no extra command.
--
-- A claim made ahead (ARGV 11 > 0) decided within the start window (ARGV 15) of its slot is the
-- run's start, as a claim at the slot is: its record says 'running' and its lease ends where the
-- run's will, the job's full ttl past the slot. Every check start.lua makes at a start (the claim is
-- ours, the grace, the pause, a later slot) this call has just made, by this server's clock, at
-- most the window before the slot, which is when start.lua ran for a staged claim: a slot costs two
-- calls, this and its outcome. A claim made ahead earlier than that is staged: its record says
-- 'claimed', not 'running', and its lease lives only until the slot plus ARGV 12. Just before the
-- slot its worker starts it (start.lua), which makes the record 'running' and the lease the job's
-- full ttl. A staged claim whose worker died or stalled before that is known never to have started,
-- so recover.lua hands it to a peer whatever the job's recover policy. The slot record lives until
-- slot + record ttl at least, counted from the slot, never from a claim made before it.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local micros = tonumber(t[1]) * 1000000 + tonumber(t[2])

--! include fence.lua
--! include lease.lua

-- A decision without a run, in the job's decisions stream (as complete.lua adds a run's outcome to its history).
local function remember(stream, keep, slot_text, worker, outcome, reason, manual)
  if tonumber(keep) > 0 then
    redis.call('XADD', stream, 'MAXLEN', '~', keep, '*', 'slot', slot_text, 'worker', worker, 'outcome', outcome,
        'attempt', '0', 'token', '0', 'durationMs', '0', 'error', '', 'reason', reason, 'manual', manual and '1' or '0')
    redis.call('PEXPIRE', stream, 604800000)
  end
end

-- The marks keys this call wrote, each given its ttl once at the end (not once per slot).
local touched = {}
-- See the end of the script: longer than hash-max-listpack-value, so that the marks are a hashtable.
local MARKS_ENCODING = 'lockstep: this value is longer than hash-max-listpack-value, so that Redis keeps this hash of '
    .. 'marks as a hashtable: each field read or written in O(1), not by scanning a listpack of every job of the group'

local function claim(k, a)
  local record, lease_key, running, marks_key, pause_key, decisions = k[1], k[2], k[3], k[4], k[5], k[6]
  local token, slot_text, mode, ttl, record_ttl = a[1], a[2], a[7], tonumber(a[4]), tonumber(a[5])
  local miss_why = 'reported' -- 'miss:<code>': the worker's slot_missed code, the reason its history entry keeps
  if string.sub(mode, 1, 5) == 'miss:' then
    miss_why, mode = string.sub(mode, 6), 'miss'
  end
  local skip_why
  if string.sub(mode, 1, 5) == 'skip:' then
    skip_why, mode = string.sub(mode, 6), 'skip'
  end
  local slot = tonumber(slot_text)
  local f = a[14]
  local lf = lease_key == marks_key and f or '' -- an exclusive job's lease is in its marks (lease.lua)

  -- A claim made ahead before the start window is staged: a short lease until its start; see the header.
  -- (A window of 0 stages every claim made ahead, whenever it is decided: Redlock's masters.)
  local window = tonumber(a[15])
  local staged = a[11] ~= '0' and (window == 0 or slot - now > window)

  local function reply(status, fence, holder)
    local first = redis.call('ZRANGE', running, 0, 0, 'WITHSCORES')
    return {status, fence, now, tonumber(first[2] or '0'), holder or '', staged and 0 or 1}
  end

  local function lease_ttl()
    if staged then
      return math.max(slot - now, 0) + tonumber(a[12])
    end
    return ttl + math.max(slot - now, 0) -- the run's lease, from its slot
  end
  -- The run's lease and its running entry. An exclusive job's lease is written with its marks, by
  -- the caller ('owner' and 'until' in the same HSET as the other marks: no command of its own).
  local function take_lease()
    local lease_ttl = lease_ttl()
    if lf == '' then
      redis.call('SET', lease_key, token, 'PX', lease_ttl)
    end
    redis.call('ZADD', running, now + lease_ttl, slot_text)
    if redis.call('PTTL', running) < record_ttl then
      redis.call('PEXPIRE', running, record_ttl)
    end
  end

  -- The marks first: a slot later than the job's 'decided' mark has no record (every record of a
  -- scheduled slot moved the mark to it in the same call), so the record is read only when it may
  -- exist: a repeat, a race, a slot decided otherwise, or a manual run (which never moves the marks).
  local manual = a[10] == '1'
  local backfill = string.match(a[10], '^b:(.+)$') -- the id of the backfill this slot belongs to, or nil
  local marks = redis.call('HMGET', marks_key, f .. 'decided', f .. 'started', f .. 'fence', f .. 'kept', f .. 'mkept', f .. 'turn', f .. 'bf', f .. 'bftoken',
      f .. 'owner', f .. 'until')
  -- Who holds the job's lease now: an exclusive job's read with its marks (lease.lua's rule), a run's own by its key.
  local function holder_now()
    if lf == '' then
      return redis.call('GET', lease_key)
    end
    return held_by(marks[9], marks[10], now)
  end
  local decided, started = 0, 0
  if not manual then
    decided, started = tonumber(marks[1] or '0'), tonumber(marks[2] or '0')
  end
  -- The shortest record ttl a claim of the job wrote (manual runs: their own), see the header.
  local kept_field, kept = f .. (manual and 'mkept' or 'kept'), tonumber(marks[manual and 5 or 4] or '')
  -- The job's next turn: a slot waiting for the lease (a rerun, recover.lua; or a scheduled slot behind a backfill's run).
  local turn_slot, turn_until = string.match(marks[6] or '', '^(%d+):(%d+)$')
  local r = {false}
  if manual or backfill or slot <= decided then
    r = redis.call('HMGET', record, 'token', 'state', 'fence', 'why')
  end
  if r[1] then
    if r[1] ~= token then
      return reply('taken', 0, r[1]) -- the record decides, not a time window
    end
    -- A repeat of our own request (its reply was lost): the same decision again.
    if r[2] == 'running' or r[2] == 'claimed' then
      staged = r[2] == 'claimed' -- a started run keeps its full lease
      local lease = holder_now()
      if mode == 'miss' then
        -- We gave up on a claim whose reply never came and never started it: disown it, so that
        -- the record says what our events say.
        if lease == token then
          lease_drop(lease_key, lf)
        end
        redis.call('ZREM', running, slot_text)
        redis.call('HSET', record, 'state', 'missed', 'why', 'disowned')
        remember(decisions, a[13], slot_text, a[6], 'missed', 'disowned', a[10] == '1')
        return reply('missed', 0)
      end
      if lease == false or lease == token then
        take_lease()
        if lf ~= '' then
          redis.call('HSET', marks_key, f .. 'holder', slot_text, f .. 'until', string.format('%.0f', now + lease_ttl()), f .. 'owner', token)
        else
          allow_marks(marks_key, f, slot_text, now + lease_ttl(), now, marks[9] or false, marks[10])
        end
        touched[marks_key] = a[9]
        return reply('claimed', tonumber(r[3]))
      end
      -- Another token holds the job's lease: a later slot replaced ours (overlap: replace) before
      -- our reply came, so ours never started. Not 'taken' (by whom? by us): superseded, and
      -- recorded so, not left 'running' outside the index until its ttl.
      redis.call('ZREM', running, slot_text)
      redis.call('HSET', record, 'state', 'missed', 'why', 'order')
      remember(decisions, a[13], slot_text, a[6], 'missed', 'order', a[10] == '1')
      return reply('superseded', 0)
    elseif r[2] == 'missed' then
      return reply(r[4] == 'order' and 'superseded' or 'missed', 0)
    elseif r[2] == 'skipped' then
      return reply(r[4] == 'paused' and 'paused' or 'skipped', 0)
    end
    return reply('taken', 0, r[1])
  end
  -- A claim ahead (up to ARGV 11 before the slot) is decided only when it wins outright; the
  -- worker starts the run at the slot by this server's clock (the reply carries 'now'). A paused
  -- job or a held lease is decided at the slot itself ('early': ask again then).
  local bf_id, bf_cursor, bf_to = string.match(marks[7] or '', '^(.+):(%d+):(%d+)$')
  if backfill then
    if bf_id ~= backfill or slot <= tonumber(bf_cursor) then
      return reply('stale', 0) -- cancelled or ended, or a slot the backfill already passed: not run again
    end
    if redis.call('EXISTS', pause_key) == 1 then
      return reply('busy', 0) -- a backfill waits while its job is paused
    end
    if turn_slot and tonumber(turn_until) > now then
      return reply('busy', 0) -- a scheduled slot (or a rerun) waits for the lease: it goes first
    end
  end
  if bf_id and not backfill and not manual and slot > tonumber(bf_cursor) and slot <= tonumber(bf_to) then
    return reply('stale', 0) -- a slot a running backfill is to decide: left to it
  end
  local ahead = now < slot
  if ahead and now < slot - tonumber(a[11]) then
    return reply('early', 0)
  end
  if not backfill and now >= slot + math.min(record_ttl, kept or record_ttl) and (manual or marks[1] == false or slot <= decided) then
    return reply('stale', 0)
  end

  local function decide(state, fence, why)
    local fields = {'state', state, 'token', token, 'worker', a[6], 'fence', fence, 'at', now}
    if why then
      fields[#fields + 1] = 'why'
      fields[#fields + 1] = why
    end
    if manual then
      fields[#fields + 1] = 'manual'
      fields[#fields + 1] = '1'
    elseif backfill then
      fields[#fields + 1] = 'origin'
      fields[#fields + 1] = 'backfill'
    end
    redis.call('HSET', record, unpack(fields))
    redis.call('PEXPIRE', record, record_ttl + math.max(slot - now, 0)) -- from the slot, not from a claim made ahead
    local mark = {}
    if slot > decided and not manual then
      mark = {f .. 'decided', slot_text}
      if state == 'missed' or state == 'skipped' then
        mark[3] = f .. 'closed' -- decided without a run: nothing of it is in flight
        mark[4] = slot_text
      end
    end
    if state == 'running' or state == 'claimed' then
      mark[#mark + 1] = f .. 'fence'
      mark[#mark + 1] = string.format('%.0f', fence)
      -- An allow run's 'holder' and 'until' never move an exclusive lease another token holds (lease.lua's allow_marks).
      local foreign = lf == '' and held_by(marks[9], marks[10], now)
      if not foreign then
        mark[#mark + 1] = f .. 'holder'
        mark[#mark + 1] = slot_text
        mark[#mark + 1] = f .. 'until'
        mark[#mark + 1] = string.format('%.0f', now + lease_ttl())
        if lf ~= '' then
          mark[#mark + 1] = f .. 'owner' -- with 'until', the job's lease (lease.lua)
          mark[#mark + 1] = token
        elseif marks[9] and marks[9] ~= '' then
          mark[#mark + 1] = f .. 'owner' -- an exclusive lease that is over: dropped, so that this 'until' cannot revive it
          mark[#mark + 1] = ''
        end
      end
      if slot > started and not manual and not backfill then
        mark[#mark + 1] = f .. 'started'
        mark[#mark + 1] = slot_text
      end
      if turn_slot and tonumber(turn_slot) == slot and not manual then
        mark[#mark + 1] = f .. 'turn'
        mark[#mark + 1] = '' -- its turn taken: given up
      end
      if backfill then
        mark[#mark + 1] = f .. 'bf'
        mark[#mark + 1] = backfill .. ':' .. slot_text .. ':' .. bf_to -- the backfill's cursor moves to this slot
        mark[#mark + 1] = f .. 'bftoken'
        mark[#mark + 1] = token -- the run holding the lease is a backfill's (see the busy answer above)
      end
    end
    if kept == nil or record_ttl < kept then
      mark[#mark + 1] = kept_field
      mark[#mark + 1] = string.format('%.0f', record_ttl)
    end
    if #mark > 0 then
      redis.call('HSET', marks_key, unpack(mark))
      touched[marks_key] = a[9]
    end
    if state == 'missed' then
      remember(decisions, a[13], slot_text, a[6], 'missed', why, manual)
    elseif state == 'skipped' then
      remember(decisions, a[13], slot_text, a[6], why == 'paused' and 'paused' or 'skipped', why, manual)
    end
  end

  if mode == 'skip' then
    decide('skipped', 0, skip_why) -- never ahead (the early check above): at or after its slot
    return reply('skipped', 0)
  end
  if mode == 'miss' and miss_why == 'no_worker' and not manual and redis.call('EXISTS', pause_key) == 1 then
    decide('skipped', 0, 'paused') -- a job no worker with its labels ran while it was paused: paused, not missed
    return reply('paused', 0)
  end
  if mode == 'miss' or (mode == 'claim' and now > slot + tonumber(a[3])) then
    decide('missed', 0, mode == 'miss' and miss_why or 'late')
    return reply('missed', 0)
  end
  if not manual and redis.call('EXISTS', pause_key) == 1 then
    if ahead then
      return reply('early', 0)
    end
    decide('skipped', 0, 'paused')
    return reply('paused', 0)
  end
  if slot < started and not backfill then
    decide('missed', 0, 'order') -- a later slot of the job already started: slots start in order
    return reply('superseded', 0)
  end
  local holder = holder_now()
  local revoked
  -- A rerun of an earlier slot refused 'busy' behind the run that held the lease holds the job's
  -- next turn (recover.lua): under overlap: skip, this slot yields to it as to a run holding the
  -- lease. The turn lapses unless its rerun keeps asking, so a rerun whose worker died blocks little.
  local turn = not manual and a[8] ~= '1' and turn_slot ~= nil and tonumber(turn_until) > now and tonumber(turn_slot) < slot
  if holder or turn then
    if ahead then
      return reply('early', 0)
    end
    if mode == 'catchup' then
      -- A catch-up slot refused busy takes the job's next turn, as a rerun does (recover.lua): a
      -- later slot claimed meanwhile (a peer's scheduled claim, in the gap between two catch-up
      -- runs) yields to it instead of starting and so costing every older catch-up slot its run
      -- (slots start in order). Its worker asks again within the turn's 5 s (ClaimAnswers), so the
      -- turn lapses 5 s after a dead worker's last ask. A backfill's slot never takes a turn.
      if not backfill and not manual and (not (turn_slot and tonumber(turn_until) > now) or tonumber(turn_slot) > slot) then
        redis.call('HSET', marks_key, f .. 'turn', slot_text .. ':' .. string.format('%.0f', now + 5000))
        touched[marks_key] = a[9]
      end
      return reply('busy', 0)
    end
    if holder and holder == marks[8] and not manual then
      -- A backfill's run holds the lease ('<job>:bftoken'): the schedule's slot waits for it, within its
      -- grace, instead of being skipped (or revoking it), and takes the job's next turn until its grace
      -- ends, so that the backfill's next claim waits for it: a backfill never costs the schedule a slot.
      if not (turn_slot and tonumber(turn_until) > now) or tonumber(turn_slot) > slot then
        redis.call('HSET', marks_key, f .. 'turn', slot_text .. ':' .. string.format('%.0f', slot + tonumber(a[3])))
        touched[marks_key] = a[9]
      end
      return reply('busy', 0)
    end
    if a[8] ~= '1' then
      decide('skipped', 0, 'overlap')
      return reply('skipped', 0)
    end
    -- overlap: replace. Revoke the run holding the lease: taking the lease makes its renewal fail,
    -- so its worker is told; leaving the running index means it is never recovered, and its
    -- outcome is refused (complete.lua then marks its record 'replaced'). Its slot is the marks'
    -- 'holder', so no key is touched that the call did not declare (Redis Cluster's rule).
    -- What it revoked is kept on the new record ('revoked': the run's slot, token, lease end and
    -- running entry's score), so that Redlock can give it back should this claim win no majority
    -- (unclaim.lua).
    local held = redis.call('HGET', marks_key, f .. 'holder')
    local score = held and redis.call('ZSCORE', running, held)
    if score then
      revoked = cjson.encode({held, holder, lease_end(lease_key, lf, now), tonumber(score)})
      redis.call('ZREM', running, held)
    end
  end
  local fence = next_fence_after(marks[3], micros)
  decide(staged and 'claimed' or 'running', fence)
  if revoked then
    redis.call('HSET', record, 'revoked', revoked)
  end
  take_lease()
  return reply('claimed', fence)
end

local replies = {}
for i = 0, #KEYS / 6 - 1 do
  local a = {}
  for j = 1, 15 do
    a[j] = ARGV[15 * i + j]
  end
  local k = {}
  for j = 1, 6 do
    k[j] = KEYS[6 * i + j]
  end
  replies[i + 1] = claim(k, a)
end
for key, ttl in pairs(touched) do
  -- A group's marks hold a few fields for each of its jobs: 200 and more at 1,000 jobs. Within
  -- hash-max-listpack-entries (512 by default) Redis keeps such a hash as one listpack,
  -- which every HMGET and HSET here scans from the start: at 200 fields a claim cost 24 us, as a
  -- hashtable 17. A value longer than hash-max-listpack-value (64 bytes by default) makes it a
  -- hashtable for good (RDB loads keep it so); written once per call and group, a no-op once there.
  redis.call('HSETNX', key, '~encoding', MARKS_ENCODING)
  redis.call('PEXPIRE', key, ttl) -- the marks live 7 days past the last decision of any job of the group
end
-- The server's clock as the call ends: every reply carries it (decisions used 'now', from the start).
local e = redis.call('TIME')
local ended = tonumber(e[1]) * 1000 + math.floor(tonumber(e[2]) / 1000)
for _, r in ipairs(replies) do
  r[3] = ended
end
return replies
