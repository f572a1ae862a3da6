-- Judges one job's expectations (expect:) on the server's clock, so that each breach is decided once
-- in the cluster however many workers ask. Every live worker calls this about once a second per job.
--
-- It reads the job's history (runs) and decisions (slots decided without a run) since its last look,
-- in chunks, and keeps per slot what became of it (the fates zset: score = slot, member
-- 'ok@<ms>:<stream id>', 'exempt@<why>:<id>' or '<outcome>:<id>'; unique per entry); once it has read
-- everything, it judges:
--   succeededWithin: each due slot (ARGV[7..], oldest first; the caller's schedule) after 'judged'
--     whose deadline (slot + within) has passed by this clock: met by a success no later than the
--     deadline, exempt when paused or skipped by a calendar, else breached (one verdict per slot);
--   successEvery: breached when 'every' has passed since the last success or since the expectation
--     was first judged, whichever is later; once until a success clears it.
-- A success read while a breach is open clears it (a 'met' verdict); a breach decided after a later
-- success was already read is cleared at once. A backfill's runs are old slots: they neither clear a
-- breach nor count as the last success.
-- Slots due before the expectation was first judged, before a change of it or of the schedule (the
-- spec), or while nobody judged for over a minute (cluster down, job disabled) are not judged one by
-- one: the dead-man's switch covers such a silence.
-- Each verdict goes to the outbox (score: when its delivery lease ends), its JSON to 'n:<id>' and
-- its holder to 'o:<id>'; it is returned to this caller, who logs and delivers it (expect_done.lua).
-- A verdict whose lease ran out undelivered (its worker died, or is stuck) is handed to this caller,
-- with whether it was logged ('l:<id>').
--
-- KEYS[1] history  KEYS[2] decisions  KEYS[3] state (hash)  KEYS[4] fates (zset)  KEYS[5] outbox (zset)
-- ARGV[1] spec (the expectation and the schedule)  ARGV[2] within (ms, 0 none)  ARGV[3] every (ms, 0 none)
-- ARGV[4] worker  ARGV[5] delivery lease (ms)  ARGV[6] job  ARGV[7..] due slots (ms)
-- Returns {judged through (ms), now (ms), notice JSON, logged ('1'/'0'), notice JSON, logged, ...}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local within = tonumber(ARGV[2])
local every = tonumber(ARGV[3])
local worker = ARGV[4]
local lease = tonumber(ARGV[5])
local job = ARGV[6]
local state, fates, outbox = KEYS[3], KEYS[4], KEYS[5]
local KEPT = 604800000 -- a week past the last look, as the history
local CHUNK = 1000
local GAP = 60000 -- nobody judged for this long: the slots due meanwhile are not judged one by one
local QUIET = 10000 -- a look that changed nothing writes its time at most this often

local s = redis.call('HMGET', state, 'spec', 'since', 'hread', 'dread', 'judged', 'ok_at', 'wopen', 'eopen', 'looked')
local dirty = false
local since, judged, ok_at, looked
if not s[1] then
  -- First judged now. The streams are read from their start (their successes tell the last one).
  since, judged, ok_at, looked = now, (within > 0 and now - within or now), 0, now
  s[3], s[4], s[7], s[8] = '', '', '', ''
  dirty = true
else
  since, judged, ok_at, looked = tonumber(s[2]), tonumber(s[5]), tonumber(s[6]), tonumber(s[9] or s[2])
  if s[1] ~= ARGV[1] then
    judged = math.max(judged, now) -- the expectation or the schedule changed: no verdict on the slots due before
    dirty = true
  elseif now - looked > GAP then
    judged = math.max(judged, within > 0 and now - within or now)
    dirty = true
  end
end
if within == 0 and judged < now then
  judged = now -- nothing to judge per slot: no fate is kept
end
local wopen, eopen = s[7] or '', s[8] or ''
local hcursor, dcursor = s[3] or '', s[4] or ''

local replies = {}
local function emit(json, logged)
  replies[#replies + 1] = json
  replies[#replies + 1] = logged
end

-- Verdicts left undelivered past their lease: this caller takes them over (before any new one).
for _, id in ipairs(redis.call('ZRANGEBYSCORE', outbox, '-inf', now, 'LIMIT', 0, 50)) do
  local json = redis.call('HGET', state, 'n:' .. id)
  if json then
    redis.call('ZADD', outbox, now + lease, id)
    redis.call('HSET', state, 'o:' .. id, worker)
    emit(json, redis.call('HGET', state, 'l:' .. id) and '1' or '0')
  else
    redis.call('ZREM', outbox, id)
  end
end

local function notice(id, kind, expectation, slot, deadline, happened)
  local json = cjson.encode({id = id, job = job, kind = kind, expectation = expectation, slot = tostring(slot),
      deadline = tostring(deadline), happened = happened, lastSuccess = tostring(ok_at), decided = tostring(now),
      by = worker})
  redis.call('HSET', state, 'n:' .. id, json, 'o:' .. id, worker)
  redis.call('ZADD', outbox, now + lease, id)
  emit(json, '0')
  dirty = true
end

local function field(f, name)
  for i = 1, #f, 2 do
    if f[i] == name then
      return f[i + 1]
    end
  end
  return nil
end

-- A success of the schedule (not a backfill's): the job's last, the fate of its slot, and the end of any open breach.
local function success(id, slot, manual)
  local at = tonumber(string.match(id, '^(%d+)'))
  if at > ok_at then
    ok_at = at
  end
  if slot and slot > judged and manual ~= '1' then
    redis.call('ZADD', fates, slot, 'ok@' .. at .. ':' .. id)
  end
  local what = 'succeeded (slot ' .. tostring(slot or 0) .. ')'
  if wopen ~= '' then
    notice('succeededWithin:' .. wopen .. ':met', 'met', 'succeededWithin', tonumber(wopen), 0, what)
    wopen = ''
  end
  if eopen ~= '' then
    notice('successEvery:' .. eopen .. ':met', 'met', 'successEvery', 0, 0, what)
    eopen = ''
  end
end

local function read(stream, cursor, on_entry)
  local from = cursor == '' and '-' or ('(' .. cursor)
  local entries = redis.call('XRANGE', stream, from, '+', 'COUNT', CHUNK)
  for _, e in ipairs(entries) do
    on_entry(e[1], e[2])
  end
  if #entries > 0 then
    dirty = true
    return entries[#entries][1], #entries < CHUNK
  end
  return cursor, true
end

local hdone, ddone
hcursor, hdone = read(KEYS[1], hcursor, function(id, f)
  if field(f, 'origin') == 'backfill' then
    return -- an old slot run on demand: not the schedule's success or failure
  end
  local slot = tonumber(field(f, 'slot'))
  local outcome = field(f, 'outcome')
  if outcome == 'succeeded' then
    success(id, slot, field(f, 'manual'))
  elseif slot and slot > judged and field(f, 'manual') ~= '1' then
    redis.call('ZADD', fates, slot, outcome .. ':' .. id)
  end
end)
dcursor, ddone = read(KEYS[2], dcursor, function(id, f)
  local slot = tonumber(field(f, 'slot'))
  if not slot or slot <= judged or field(f, 'manual') == '1' then
    return
  end
  local outcome, reason = field(f, 'outcome'), field(f, 'reason') or ''
  local what = outcome .. ' (' .. reason .. ')'
  if outcome == 'paused' or (outcome == 'skipped' and reason == 'calendar') then
    redis.call('ZADD', fates, slot, 'exempt@' .. what .. ':' .. id)
  else
    redis.call('ZADD', fates, slot, what .. ':' .. id)
  end
end)

if hdone and ddone then
  if within > 0 then
    for i = 7, #ARGV do
      local slot = tonumber(ARGV[i])
      if slot > judged then
        local deadline = slot + within
        if deadline > now then
          break -- not due yet by this clock (and neither is any later one)
        end
        local met, happened = false, nil
        for _, m in ipairs(redis.call('ZRANGEBYSCORE', fates, slot, slot)) do
          local text = string.match(m, '^(.*):[%d%-]+$') or m
          if string.sub(text, 1, 3) == 'ok@' then
            if tonumber(string.sub(text, 4)) <= deadline then
              met = true
            else
              happened = 'succeeded late'
            end
          elseif string.sub(text, 1, 7) == 'exempt@' then
            met = true
          elseif happened ~= 'succeeded late' then
            happened = text
          end
        end
        if not met then
          local id = 'succeededWithin:' .. slot
          notice(id, 'breached', 'succeededWithin', slot, deadline, happened or 'no outcome')
          if ok_at > deadline then
            -- the job has succeeded since this deadline passed: cleared as soon as it is decided
            notice(id .. ':met', 'met', 'succeededWithin', slot, 0, 'succeeded since (at ' .. ok_at .. ')')
          else
            wopen = tostring(slot)
          end
        end
        judged = slot
        dirty = true
      end
    end
  end
  if every > 0 and eopen == '' then
    local last = math.max(ok_at, since)
    if now - last >= every then
      notice('successEvery:' .. last, 'breached', 'successEvery', 0, last + every,
          ok_at > 0 and 'no success since the last one' or 'no success yet')
      eopen = tostring(now)
    end
  end
end
redis.call('ZREMRANGEBYSCORE', fates, '-inf', judged)

if dirty or now - looked >= QUIET then
  redis.call('HSET', state, 'spec', ARGV[1], 'since', tostring(since), 'hread', hcursor, 'dread', dcursor,
      'judged', tostring(judged), 'ok_at', tostring(ok_at), 'wopen', wopen, 'eopen', eopen, 'looked', tostring(now))
  redis.call('PEXPIRE', state, KEPT)
  redis.call('PEXPIRE', fates, KEPT)
  redis.call('PEXPIRE', outbox, KEPT)
end
table.insert(replies, 1, tostring(now))
table.insert(replies, 1, tostring(judged))
return replies
