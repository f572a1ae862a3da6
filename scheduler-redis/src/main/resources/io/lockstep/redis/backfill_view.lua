-- What Redis knows of some of a job's slots, for a backfill (BackfillView): which of them were
-- decided, and from which slot on that is known at all. A decided slot has a record until its ttl
-- (kept in the marks, see claim.lua) and, once its run ended or it was decided without a run, an
-- entry in the job's history or decisions stream (complete.lua, claim.lua) until the stream is
-- trimmed to history.keep or expires a week after its last entry. A stream is whole from a time T
-- when no entry written at T or later was ever removed: it was never trimmed (entries-added equals
-- its length) or its first entry is later than T, and no entry from T on was deleted
-- (max-deleted-entry-id). An entry of slot S is written at S minus the claim lead at the earliest,
-- so the streams tell S's fate when both are whole from S minus ARGV[3].
-- A backfill also keeps what was decided of its range when it was asked for (a set of slots), so
-- that its driver never depends on a history that its own runs push out.
-- KEYS[1] the job's group marks (hash), KEYS[2] its history (stream), KEYS[3] its decisions (stream),
-- KEYS[4] the backfill's slots decided when it was asked for (set; absent before it is asked for),
-- KEYS[5..] the slot records asked about
-- ARGV[1] the job's field prefix in the marks ('<job>:'), ARGV[2] the earliest slot asked about (ms),
-- ARGV[3] the margin (ms): how long before its slot an entry of it may be written,
-- ARGV[4..] the slots asked about (ms), in the order of KEYS[5..]
-- Returns {server ms, the backfill mark ('<id>:<cursor>:<to>') or '', the job's 'kept' or '',
-- {1-based index among KEYS[5..] of each slot with a record, or in KEYS[4]}, {slot (ms text) of each stream entry
-- at or after ARGV[2]}, {for each stream: ms from which it is whole, 0 if from its beginning, -1 if absent}}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local marks = redis.call('HMGET', KEYS[1], ARGV[1] .. 'bf', ARGV[1] .. 'kept')
local from = tonumber(ARGV[2])
local exists = {}
local asked = redis.call('EXISTS', KEYS[4]) == 1
if asked then
  redis.call('PEXPIRE', KEYS[4], 604800000) -- kept a week past the backfill's last look at it, however slow it runs
end
for i = 5, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 or (asked and redis.call('SISMEMBER', KEYS[4], ARGV[i - 1]) == 1) then
    exists[#exists + 1] = i - 4
  end
end
local slots, whole = {}, {}
for s = 2, 3 do
  if redis.call('EXISTS', KEYS[s]) == 0 then
    whole[#whole + 1] = -1
  else
    local info = redis.call('XINFO', 'STREAM', KEYS[s])
    local f = {}
    for i = 1, #info, 2 do
      f[info[i]] = info[i + 1]
    end
    local since = 0
    local added = tonumber(f['entries-added'] or '') -- Redis 7 and later; before, trimming cannot be told apart
    if added == nil or added > tonumber(f['length']) then -- (maybe) trimmed: whole from its first entry on
      local first = f['first-entry'] and f['first-entry'][1] or f['last-generated-id']
      since = tonumber(string.match(first, '^(%d+)')) + 1
    end
    local deleted = tonumber(string.match(f['max-deleted-entry-id'] or '0-0', '^(%d+)'))
    if deleted > 0 and deleted + 1 > since then
      since = deleted + 1
    end
    whole[#whole + 1] = since
    for _, e in ipairs(redis.call('XRANGE', KEYS[s], tostring(math.max(from - tonumber(ARGV[3]), 0)), '+')) do
      local fields = e[2]
      for i = 1, #fields, 2 do
        if fields[i] == 'slot' then
          if tonumber(fields[i + 1]) >= from then
            slots[#slots + 1] = fields[i + 1]
          end
          break
        end
      end
    end
  end
end
return {now, marks[1] or '', marks[2] or '', exists, slots, whole}
