-- (Included where a script says '--! include marks.lua'.) The groups' marks one call reads and
-- writes, each group's hash read with one HMGET and written with one HSET per call, however many of
-- its jobs' slots the call carries (a worker's batch is in group order: RedisKeys.groups). Before
-- this, every slot read its job's fields and wrote them back, two commands a slot.
-- The call first says which fields it will read (marks_want, for every item, before any decision),
-- then marks_load reads them all; mark and mark_set read and write through the cache, so that a
-- later item of the call sees what an earlier one wrote (two slots of one job in one call, the
-- group's fence); marks_flush writes what changed, once per hash, before the call ends.
-- Atomicity is unchanged: a script's writes reach the data set, the AOF and the replicas as one
-- (Redis propagates a script's effects together), so no reader ever sees a slot record without the
-- marks that its call wrote with it.
local marks_wanted, marks_values, marks_dirty, marks_order = {}, {}, {}, {}

local function marks_want(key, field)
  local w = marks_wanted[key]
  if not w then
    w = {}
    marks_wanted[key] = w
    marks_order[#marks_order + 1] = key
  end
  w[#w + 1] = field
end

local function marks_load()
  for _, key in ipairs(marks_order) do
    local fields = marks_wanted[key]
    local got = redis.call('HMGET', key, unpack(fields))
    local values = marks_values[key] or {}
    for i, field in ipairs(fields) do
      if values[field] == nil then
        values[field] = got[i] -- false when the field is absent, as HMGET says
      end
    end
    marks_values[key] = values
  end
end

local function values_of(key)
  local values = marks_values[key]
  if not values then
    values = {}
    marks_values[key] = values
  end
  return values
end

-- The field's value (a string), or false when absent. A field not wanted up front is read now.
local function mark(key, field)
  local values = values_of(key)
  local v = values[field]
  if v == nil then
    v = redis.call('HGET', key, field)
    values[field] = v
  end
  return v
end

local function mark_set(key, field, value)
  values_of(key)[field] = value
  local d = marks_dirty[key]
  if not d then
    d = {}
    marks_dirty[key] = d
  end
  d[field] = value
end

-- Writes what the call changed: one HSET per hash. Returns the keys written.
local function marks_flush()
  local written = {}
  for key, d in pairs(marks_dirty) do
    local args = {}
    for field, value in pairs(d) do
      args[#args + 1] = field
      args[#args + 1] = value
    end
    redis.call('HSET', key, unpack(args))
    written[#written + 1] = key
  end
  marks_dirty = {}
  return written
end
