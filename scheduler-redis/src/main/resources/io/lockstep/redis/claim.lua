-- Decides slots, each atomically, by the server's clock (never the worker's). One call may carry
-- many slots (of jobs in the same hash slot on Redis Cluster; of any jobs on a standalone server):
-- the script's own cost is then paid once per batch instead of once per slot.
-- Per slot i (0-based), 5 keys from KEYS[5i+1]:
--   slot record (hash), fence counter, lease, running index (zset), last decided slot
-- and 9 arguments from ARGV[9i+1]:
--   owner token, slot (epoch ms), misfire grace (ms), lease ttl (ms), slot record ttl (ms),
--   worker id, mode (claim | miss | catchup), '1' = overlap replace, ttl of the last-slot marker (ms)
-- Returns per slot {status, fencing token, server time ms, earliest lease end among the job's runs
-- in flight (server ms, 0 if none)}; status is claimed|taken|skipped|missed|early|busy. The last
-- element lets every worker that races a slot know when to look for a run that died, without polling.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function claim(k, a)
  local record, fence_key, lease_key, running, last_key = k[1], k[2], k[3], k[4], k[5]
  local token, slot_text, mode, ttl, record_ttl = a[1], a[2], a[7], tonumber(a[4]), a[5]

  local function reply(status, fence)
    local first = redis.call('ZRANGE', running, 0, 0, 'WITHSCORES')
    return {status, fence, now, tonumber(first[2] or '0')}
  end

  local function take_lease()
    redis.call('SET', lease_key, token, 'PX', ttl)
    redis.call('ZADD', running, now + ttl, slot_text)
    redis.call('PEXPIRE', running, record_ttl)
  end

  local owner = redis.call('HGET', record, 'token')
  if owner then
    -- The record decides, not a time window. A repeat of our own claim (its reply was lost) wins again.
    if owner == token and redis.call('HGET', record, 'state') == 'running' then
      local lease = redis.call('GET', lease_key)
      if lease == false or lease == token then
        take_lease()
        return reply('claimed', tonumber(redis.call('HGET', record, 'fence')))
      end
    end
    return reply('taken', 0)
  end
  local slot = tonumber(slot_text)
  if now < slot then
    return reply('early', 0)
  end

  local function decide(state, fence)
    redis.call('HSET', record, 'state', state, 'token', token, 'worker', a[6], 'fence', fence, 'at', now)
    redis.call('PEXPIRE', record, record_ttl)
    local last = tonumber(redis.call('GET', last_key) or '0')
    if slot > last then
      redis.call('SET', last_key, slot_text, 'PX', a[9])
    end
  end

  if mode == 'miss' or (mode == 'claim' and now > slot + tonumber(a[3])) then
    decide('missed', 0)
    return reply('missed', 0)
  end
  local holder = redis.call('GET', lease_key)
  if holder then
    if mode == 'catchup' then
      return reply('busy', 0)
    end
    if a[8] ~= '1' then
      decide('skipped', 0)
      return reply('skipped', 0)
    end
    -- overlap: replace. Revoke the run holding the lease: its renewal now fails, so its worker is
    -- told, and its record no longer counts as running (its outcome can no longer be written).
    local base = string.sub(record, 1, #record - #slot_text)
    for _, member in ipairs(redis.call('ZRANGE', running, 0, -1)) do
      local key = base .. member
      if redis.call('HGET', key, 'token') == holder then
        redis.call('HSET', key, 'state', 'replaced', 'replaced_by', token)
        redis.call('ZREM', running, member)
      end
    end
  end
  local fence = redis.call('INCR', fence_key)
  decide('running', fence)
  take_lease()
  return reply('claimed', fence)
end

local replies = {}
for i = 0, #KEYS / 5 - 1 do
  replies[i + 1] = claim({KEYS[5 * i + 1], KEYS[5 * i + 2], KEYS[5 * i + 3], KEYS[5 * i + 4], KEYS[5 * i + 5]},
      {ARGV[9 * i + 1], ARGV[9 * i + 2], ARGV[9 * i + 3], ARGV[9 * i + 4], ARGV[9 * i + 5], ARGV[9 * i + 6],
       ARGV[9 * i + 7], ARGV[9 * i + 8], ARGV[9 * i + 9]})
end
return replies
