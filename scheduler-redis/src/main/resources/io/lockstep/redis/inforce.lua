-- Stamps the jobs of a worker's config as enabled or disabled now, by this server's clock (see
-- io.lockstep.scheduler.lock.InForce, which reads what this keeps). One hash, a field per job:
-- 'lastOn,offSince,lastOff,closedFrom,closedTo' (epoch ms, empty for none): its last enabled
-- stamp, the current run of disabled stamps (where it starts: its first stamp, but no sooner than
-- ARGV[1] ms after the last enabled one; and its last stamp; a run breaks where two are more than
-- ARGV[1] ms apart, and at every enabled stamp), and the latest closed period out of force. So
-- disabled and enabled stamps interleaved (a rollout, two configs) never make a period.
-- KEYS[1] the in-force hash
-- ARGV[1] gap ms; ARGV[2] keep ms (also the hash's ttl); ARGV[3] '1': forget the jobs stamped by
-- nobody for keep ms (and return them); ARGV[4] n; ARGV[5] '1': the first stamp of a worker's life
-- (its disabled jobs start a new run: the cluster may have been down just before, and that time is
-- owed); ARGV[6..5+n] the enabled jobs, then the disabled ones
-- Returns {now, forgotten job...}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local gap = tonumber(ARGV[1])
local keep = tonumber(ARGV[2])
local n = tonumber(ARGV[4])
local fresh = ARGV[5] == '1'

local function num(s)
  if s == nil or s == '' then
    return nil
  end
  return tonumber(s)
end

local function fmt(x)
  if x == nil then
    return ''
  end
  return string.format('%.0f', x)
end

local function read(job)
  local v = redis.call('HGET', KEYS[1], job)
  local f = {}
  if v then
    local i = 1
    for part in string.gmatch(v .. ',', '([^,]*),') do
      f[i] = num(part)
      i = i + 1
    end
  end
  return {on = f[1], since = f[2], last_off = f[3], from = f[4], to = f[5]}
end

-- closes the current run of disabled stamps into the closed period (when it reached its start; never past now)
local function close(s)
  if s.since and s.last_off and s.since <= math.min(s.last_off, now) then
    s.from, s.to = s.since, math.min(s.last_off, now)
  end
  s.since, s.last_off = nil, nil
end

for i = 6, #ARGV do
  local job = ARGV[i]
  local s = read(job)
  if i < 6 + n then
    close(s) -- enabled: a run of disabled stamps before it is a period (interleaved ones never reach their start)
    s.on = now
  else
    if s.last_off and now < s.last_off then
      s.since, s.last_off = nil, nil -- the clock went back: that run proves nothing
    end
    if fresh or not s.last_off or now - s.last_off > gap then
      close(s)
      s.since = math.max(now, (s.on or now) + gap) -- no sooner than the gap after the last enabled stamp (or now: none known)
    end
    s.last_off = now
  end
  redis.call('HSET', KEYS[1], job, fmt(s.on) .. ',' .. fmt(s.since) .. ',' .. fmt(s.last_off) .. ',' .. fmt(s.from) .. ',' .. fmt(s.to))
end
redis.call('PEXPIRE', KEYS[1], keep)
local result = {now}
if ARGV[3] == '1' then
  local all = redis.call('HGETALL', KEYS[1])
  for i = 1, #all, 2 do
    local s = read(all[i])
    local last = math.max(s.on or 0, s.last_off or 0)
    if now - last > keep then
      redis.call('HDEL', KEYS[1], all[i])
      result[#result + 1] = all[i]
    end
  end
end
return result
