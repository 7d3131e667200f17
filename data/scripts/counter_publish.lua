-- counter_publish.lua: add to a counter and announce, once, when it reaches a threshold.
--
-- INCRBY and the check run atomically, so among any number of concurrent callers exactly
-- one sees the counter go from below the threshold to at or above it, and only that call
-- publishes. If the counter later drops below the threshold (negative increment) and
-- climbs back, that is a new crossing and is announced again.
--
-- The message is "<key> reached <threshold>: <value>", e.g. "votes:{poll:5} reached 100: 102".
--
-- KEYS[1]  counter key, e.g. votes:{poll:5}
-- ARGV[1]  increment (an integer, may be negative)
-- ARGV[2]  threshold (an integer)
-- ARGV[3]  channel to publish to, e.g. alerts:votes
--
-- Returns {value, published, receivers}: the counter after the increment, 1 if this call
-- crossed the threshold and published (else 0), and how many subscribers got the message.
-- Errors: "ERR ..." for bad arguments, or INCRBY's error if the key is not an integer.
--
-- redis-cli --eval data/scripts/counter_publish.lua votes:{poll:5} , 1 100 alerts:votes

local key = KEYS[1]
local increment = tonumber(ARGV[1])
local threshold = tonumber(ARGV[2])
local channel = ARGV[3]
if not increment or increment % 1 ~= 0 then
  return redis.error_reply('ERR increment must be an integer')
end
if not threshold or threshold % 1 ~= 0 then
  return redis.error_reply('ERR threshold must be an integer')
end
if not channel or channel == '' then
  return redis.error_reply('ERR channel is required')
end

local value = redis.call('INCRBY', key, ARGV[1])
local before = value - increment
if before < threshold and value >= threshold then
  local message = string.format('%s reached %d: %d', key, threshold, value)
  local receivers = redis.call('PUBLISH', channel, message)
  return {value, 1, receivers}
end
return {value, 0, 0}
