-- ticket_prepare.lua: RESERVE step of a purchase: create the order and take its tickets
-- out of the event's availability, consuming the customer's hold if it is still alive.
--
-- Purchase states (see ticket_purchase.lua for the other transitions):
--   (none) --prepare--> RESERVED --AUTHORIZE--> AUTHORIZED --COMPLETE--> COMPLETED
--                          |                        |
--                          +--------FAIL------------+------------------> FAILED
--
-- The customer's live hold (ticket_hold.lua) covers up to its size; the rest must come
-- from the free tickets (available - held). The hold is consumed entirely, even if the
-- order is smaller. `available` is decremented atomically and never goes below zero (nor
-- below the tickets other customers hold): an order that does not fit is refused whole.
--
-- KEYS[1]  inventory hash, e.g. event:{42} (fields available, held, reserved, sold)
-- KEYS[2]  holds sorted set, e.g. event:{42}:holds
-- KEYS[3]  hold sizes hash, e.g. event:{42}:hold_qty
-- KEYS[4]  order hash, e.g. order:{42}:1001 (must not exist yet)
-- ARGV[1]  customer id
-- ARGV[2]  tickets to buy, >= 1
-- ARGV[3]  current time in ms (optional: when omitted, the server clock is read with TIME)
--
-- Returns {"RESERVED", free} where free = tickets still free for others afterwards.
-- Errors: "WRONGSTATE ..." if the order already exists, "SOLDOUT ..." if the tickets are
-- not available (nothing changes), "NOEVENT ...", "ERR ..." for bad arguments.
--
-- redis-cli --eval data/scripts/ticket_prepare.lua event:{42} event:{42}:holds event:{42}:hold_qty order:{42}:1001 , alice 2

local inventory, holds, sizes, order = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local customer = ARGV[1]
local quantity = tonumber(ARGV[2])
local now = tonumber(ARGV[3])

if not customer or customer == '' then
  return redis.error_reply('ERR customer id is required')
end
if not quantity or quantity < 1 or quantity % 1 ~= 0 then
  return redis.error_reply('ERR ticket count must be a positive integer')
end
if ARGV[3] == nil or ARGV[3] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
elseif not now then
  return redis.error_reply('ERR now must be a time in ms')
end

local state = redis.call('HGET', order, 'state')
if state then
  return redis.error_reply('WRONGSTATE order ' .. order .. ' is already ' .. state)
end
local available = tonumber(redis.call('HGET', inventory, 'available'))
if not available then
  return redis.error_reply('NOEVENT ' .. inventory .. ' has no available field')
end

-- Free the holds that expired at or before now (same as ticket_hold.lua).
local expired = redis.call('ZRANGEBYSCORE', holds, '-inf', now)
if #expired > 0 then
  local freed = 0
  for _, who in ipairs(expired) do
    freed = freed + (tonumber(redis.call('HGET', sizes, who)) or 0)
    redis.call('HDEL', sizes, who)
  end
  redis.call('ZREMRANGEBYSCORE', holds, '-inf', now)
  redis.call('HINCRBY', inventory, 'held', -freed)
end

local held = tonumber(redis.call('HGET', inventory, 'held')) or 0
local mine = tonumber(redis.call('HGET', sizes, customer)) or 0
local free = available - held
if quantity > free + mine or quantity > available then
  return redis.error_reply('SOLDOUT ' .. quantity .. ' requested for ' .. order .. ', ' ..
    math.min(free + mine, available) .. ' available')
end

if mine > 0 then
  redis.call('HDEL', sizes, customer)
  redis.call('ZREM', holds, customer)
  redis.call('HINCRBY', inventory, 'held', -mine)
end
redis.call('HINCRBY', inventory, 'available', -quantity)
redis.call('HINCRBY', inventory, 'reserved', quantity)
redis.call('HSET', order, 'state', 'RESERVED', 'customer', customer,
  'quantity', quantity, 'event', inventory)
return {'RESERVED', free + mine - quantity}
