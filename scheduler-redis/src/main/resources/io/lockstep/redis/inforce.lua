-- Stamps jobs as in force (enabled in a live worker's config) and the cluster as alive, by this
-- server's clock (see io.lockstep.scheduler.lock.InForce). One hash, field per job:
-- 'last,offFrom,offTo' (epoch ms; the off period empty when none is kept), and '*': the cluster's
-- last stamp. A job whose last stamp is more than ARGV[1] ms older than the cluster's was out of
-- force from last + ARGV[1] to the cluster's stamp: that period is kept (the latest only) when the
-- job is stamped again.
-- KEYS[1] the in-force hash
-- ARGV[1] gap ms; ARGV[2] how long a job unstamped is kept (ms; also the hash's ttl);
-- ARGV[3] '1': forget the jobs unstamped that long (and return them); ARGV[4..] the jobs
-- Returns {now, forgotten job...}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local gap = tonumber(ARGV[1])
local keep = tonumber(ARGV[2])
local alive = tonumber(redis.call('HGET', KEYS[1], '*') or '0')
for i = 4, #ARGV do
  local v = redis.call('HGET', KEYS[1], ARGV[i])
  local off = ','
  if v then
    local last, from, to = string.match(v, '^(%d+),(%d*),(%d*)$')
    last = tonumber(last)
    if last and alive - last > gap then
      off = string.format('%.0f,%.0f', last + gap, alive) -- the cluster ran on without the job
    elseif last then
      off = from .. ',' .. to
    end
  end
  redis.call('HSET', KEYS[1], ARGV[i], string.format('%.0f', now) .. ',' .. off)
end
if now > alive then
  redis.call('HSET', KEYS[1], '*', string.format('%.0f', now))
end
redis.call('PEXPIRE', KEYS[1], keep)
local result = {now}
if ARGV[3] == '1' then
  local all = redis.call('HGETALL', KEYS[1])
  for i = 1, #all, 2 do
    local last = tonumber(string.match(all[i + 1], '^(%d+),') or '')
    if all[i] ~= '*' and (not last or now - last > keep) then
      redis.call('HDEL', KEYS[1], all[i])
      result[#result + 1] = all[i]
    end
  end
end
return result
