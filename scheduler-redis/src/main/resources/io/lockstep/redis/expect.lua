-- Judges one job's expectations (expect:) on the server's clock, so that each breach is decided once
-- in the cluster however many workers ask. Every live worker calls this about once a second per job.
--
-- It reads the job's history (runs) and decisions (slots decided without a run) since its last look,
-- in chunks, and keeps per slot what became of it (the fates zset: score = slot, member = 'ok:<ms>',
-- 'exempt:<why>' or '<outcome>'); once it has read everything, it judges:
--   succeededWithin: each due slot (ARGV[7..], oldest first; the caller's schedule) whose deadline
--     (slot + within) has passed by this clock: met by a success no later than the deadline, exempt
--     when paused or skipped by a calendar, else breached (one verdict per slot);
--   successEvery: breached when 'every' has passed since the last success (or since the expectation
--     was first judged, whichever is later), once until a success clears it.
-- A success read while a breach is open clears it (a 'met' verdict). Each verdict goes to the outbox
-- (score: when its delivery lease ends) and its JSON to the state ('n:<id>'); it is returned to this
-- caller, who logs and delivers it (expect_done.lua). A verdict whose lease ran out undelivered (its
-- worker died) is handed to this caller, with whether it was logged ('l:<id>').
--
-- KEYS[1] history  KEYS[2] decisions  KEYS[3] state (hash)  KEYS[4] fates (zset)  KEYS[5] outbox (zset)
-- ARGV[1] spec  ARGV[2] within (ms, 0 none)  ARGV[3] every (ms, 0 none)  ARGV[4] worker  ARGV[5] delivery lease (ms)
-- ARGV[6] job  ARGV[7..] due slots (ms)
-- Returns {judged through (ms), now (ms), notice JSON, logged ('1'/'0'), notice JSON, logged, ...}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local within = tonumber(ARGV[2])
local every = tonumber(ARGV[3])
local lease = tonumber(ARGV[5])
local job = ARGV[6]
local state, fates, outbox = KEYS[3], KEYS[4], KEYS[5]
local KEPT = 604800000 -- a week past the last look, as the history
local CHUNK = 1000

local s = redis.call('HMGET', state, 'spec', 'since', 'hread', 'dread', 'judged', 'ok_at', 'wopen', 'eopen')
if s[1] ~= ARGV[1] then
  -- New, or changed: start afresh from now. The streams are read again from their start (their
  -- successes tell the last one); no slot before now less 'within' is judged.
  s = {ARGV[1], tostring(now), '', '', tostring(within > 0 and now - within or 0), '0', '', ''}
  redis.call('HSET', state, 'spec', ARGV[1], 'since', s[2], 'hread', '', 'dread', '', 'judged', s[5], 'ok_at', '0',
      'wopen', '', 'eopen', '')
end
local since = tonumber(s[2])
local judged = tonumber(s[5])
local ok_at = tonumber(s[6])
local wopen, eopen = s[7] or '', s[8] or ''

local replies = {}
local function emit(json, logged)
  replies[#replies + 1] = json
  replies[#replies + 1] = logged
end

-- Verdicts a dead worker left undelivered: this caller takes them over (before any new one).
for _, id in ipairs(redis.call('ZRANGEBYSCORE', outbox, '-inf', now, 'LIMIT', 0, 50)) do
  local json = redis.call('HGET', state, 'n:' .. id)
  if json then
    redis.call('ZADD', outbox, now + lease, id)
    emit(json, redis.call('HEXISTS', state, 'l:' .. id) == 1 and '1' or '0')
  else
    redis.call('ZREM', outbox, id)
  end
end

local function notice(id, kind, expectation, slot, deadline, happened)
  local json = cjson.encode({id = id, job = job, kind = kind, expectation = expectation, slot = tostring(slot),
      deadline = tostring(deadline), happened = happened, lastSuccess = tostring(ok_at), decided = tostring(now),
      by = ARGV[4]})
  redis.call('HSET', state, 'n:' .. id, json)
  redis.call('ZADD', outbox, now + lease, id)
  emit(json, '0')
end

local function field(f, name)
  for i = 1, #f, 2 do
    if f[i] == name then
      return f[i + 1]
    end
  end
  return nil
end

local function at_of(id)
  return tonumber(string.match(id, '^(%d+)'))
end

-- A success: the job's last, the fate of its slot, and the end of any open breach.
local function success(id, slot, manual)
  local at = at_of(id)
  if at > ok_at then
    ok_at = at
  end
  if slot and slot > judged and manual ~= '1' then
    redis.call('ZADD', fates, slot, 'ok:' .. at)
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
  return (#entries > 0 and entries[#entries][1] or cursor), #entries < CHUNK
end

local hread, hdone = read(KEYS[1], s[3] or '', function(id, f)
  local slot = tonumber(field(f, 'slot'))
  local outcome = field(f, 'outcome')
  if outcome == 'succeeded' then
    success(id, slot, field(f, 'manual'))
  elseif slot and slot > judged and field(f, 'manual') ~= '1' then
    redis.call('ZADD', fates, slot, outcome .. ':' .. id)
  end
end)
local dread, ddone = read(KEYS[2], s[4] or '', function(id, f)
  local slot = tonumber(field(f, 'slot'))
  if not slot or slot <= judged or field(f, 'manual') == '1' then
    return
  end
  local outcome, reason = field(f, 'outcome'), field(f, 'reason') or ''
  if outcome == 'paused' or (outcome == 'skipped' and reason == 'calendar') then
    redis.call('ZADD', fates, slot, 'exempt:' .. outcome .. ' (' .. reason .. ')')
  else
    redis.call('ZADD', fates, slot, outcome .. ' (' .. reason .. '):' .. id)
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
          local kind, rest = string.match(m, '^([^:]*):(.*)$')
          if kind == 'ok' then
            if tonumber(rest) <= deadline then
              met = true
            else
              happened = 'succeeded late'
            end
          elseif kind == 'exempt' then
            met = true
          elseif happened ~= 'succeeded late' then
            happened = kind
          end
        end
        if not met then
          notice('succeededWithin:' .. slot, 'breached', 'succeededWithin', slot, deadline, happened or 'no outcome')
          wopen = tostring(slot)
        end
        judged = slot
      end
    end
    redis.call('ZREMRANGEBYSCORE', fates, '-inf', judged)
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

redis.call('HSET', state, 'hread', hread, 'dread', dread, 'judged', tostring(judged), 'ok_at', tostring(ok_at),
    'wopen', wopen, 'eopen', eopen)
redis.call('PEXPIRE', state, KEPT)
redis.call('PEXPIRE', fates, KEPT)
redis.call('PEXPIRE', outbox, KEPT)
table.insert(replies, 1, tostring(now))
table.insert(replies, 1, tostring(judged))
return replies
