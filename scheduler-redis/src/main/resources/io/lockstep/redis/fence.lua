-- (Included where a script says '--! include fence.lua'.) The next fencing token of a counter:
-- max(counter + 1, the server's time in microseconds), so tokens never go back, not even after the
-- counter was lost (a restart without persistence, a failover that lost the last increments, the
-- counter's own ttl, refreshed on every use), as long as the servers' clocks are within a failover's
-- time of each other. The one place the rule is written: claims, recoveries and the lock API use it.
-- A job's counter is the field '<job>:fence' of its group's marks (read and written with the other
-- marks, no command of its own); a lock's is a key of its own.
local function next_fence_after(current, micros)
  local fence = tonumber(current or '0') + 1
  if fence < micros then
    fence = micros
  end
  return fence
end

-- A lock's counter is written and read in one command (SET ... GET, Redis 6.2): the server's time,
-- which is the next token unless the counter is at or past it (tokens drawn within one microsecond,
-- or a clock that went back), and only then written again.
local function next_fence(key, ttl, micros)
  local now = string.format('%.0f', micros)
  local fence = next_fence_after(redis.call('SET', key, now, 'PX', ttl, 'GET'), micros)
  if fence ~= micros then
    redis.call('SET', key, string.format('%.0f', fence), 'PX', ttl)
  end
  return fence
end
