// The tools Nimbus may use: what the model is told about each one, and the code that runs it.
//
// The model decides *what* to look up; the session decides *whose* data it may see. So no tool takes a
// customer or an email from the model: the signed-in customer arrives in `context`, from our code, and
// another customer's order looks exactly like one that does not exist.
import { query } from '../shared/db.ts';
import type { ToolCall, ToolDefinition } from '../shared/llm/index.ts';
import type { Customer } from './session.ts';

/** Every result is a small JSON object. Failures are results too: `{ error }` is something the model can read. */
export type ToolResult = Record<string, unknown>;

/** What our code hands every tool beside the model's arguments. The model never sees or sets it. */
export interface ToolContext {
  /** The signed-in customer: every lookup is limited to their orders. */
  customer: Customer;
}

interface Tool {
  definition: ToolDefinition;
  run(args: Record<string, unknown>, context: ToolContext): Promise<ToolResult>;
}

/** Thrown by argument checks; turned into an `{ error }` result by runTool. */
class ArgumentError extends Error {}

// ---------------------------------------------------------------------------------------------------
// get_order_status

const getOrderStatus: Tool = {
  definition: {
    name: 'get_order_status',
    description:
      'Look up one order by its order number: status (pending, paid, shipped, delivered, cancelled, refunded), ' +
      'dates, items and total. Use it for any question about a specific order. Never guess an order number.',
    parameters: {
      type: 'object',
      properties: { order_id: { type: 'integer', description: 'The order number, e.g. 1043.' } },
      required: ['order_id'],
      additionalProperties: false,
    },
  },
  async run(args, context) {
    const orderId = positiveInteger(args.order_id, 'order_id');
    // Placeholders (?) send the values separately from the SQL, so no input can change the query.
    // `customer_id = ?` is the session's boundary: someone else's order is simply not found.
    const orders = await query<OrderRow[]>(
      `SELECT o.id, o.status, o.shipping_cost,
              DATE_FORMAT(o.created_at, '%Y-%m-%d') AS placed_on,
              DATE_FORMAT(o.paid_at, '%Y-%m-%d') AS paid_on,
              DATE_FORMAT(o.shipped_at, '%Y-%m-%d') AS shipped_on,
              DATE_FORMAT(o.delivered_at, '%Y-%m-%d') AS delivered_on,
              ${ORDER_TOTAL} AS total
         FROM orders o WHERE o.id = ? AND o.customer_id = ?`,
      [orderId, context.customer.id],
    );
    if (orders.length === 0) return { error: `Order ${orderId} not found` };
    const order = orders[0];
    const items = await query<ItemRow[]>(
      `SELECT p.name AS product, i.quantity, i.unit_price
         FROM order_items i JOIN products p ON p.id = i.product_id
        WHERE i.order_id = ? ORDER BY p.name`,
      [orderId],
    );
    return {
      order_id: order.id,
      status: order.status,
      placed_on: order.placed_on,
      paid_on: order.paid_on,
      shipped_on: order.shipped_on,
      delivered_on: order.delivered_on,
      items,
      shipping: order.shipping_cost,
      total: order.total,
      currency: 'USD',
    };
  },
};

/** An order's total, summed by MySQL in DECIMAL: exact cents, where adding JavaScript floats is not. */
const ORDER_TOTAL =
  '(SELECT SUM(i.quantity * i.unit_price) FROM order_items i WHERE i.order_id = o.id) + o.shipping_cost';

interface OrderRow {
  id: number;
  status: string;
  shipping_cost: number;
  total: number;
  placed_on: string;
  paid_on: string | null;
  shipped_on: string | null;
  delivered_on: string | null;
}

interface ItemRow {
  product: string;
  quantity: number;
  unit_price: number;
}

// ---------------------------------------------------------------------------------------------------
// The registry

const TOOLS: Tool[] = [getOrderStatus];

/** What the model is told it may call. */
export const TOOL_DEFINITIONS: ToolDefinition[] = TOOLS.map((tool) => tool.definition);

/** Runs one call from the model. Unknown tools and bad arguments become `{ error }` results, not exceptions. */
export async function runTool(call: ToolCall, context: ToolContext): Promise<ToolResult> {
  const tool = TOOLS.find((t) => t.definition.name === call.name);
  if (!tool)
    return {
      error: `Unknown tool "${call.name}". Available: ${TOOLS.map((t) => t.definition.name).join(', ')}.`,
    };
  if (call.arguments_error) return { error: call.arguments_error };
  try {
    return await tool.run(call.arguments, context);
  } catch (error) {
    if (error instanceof ArgumentError) return { error: error.message };
    throw error;
  }
}

/** Models sometimes send "1043" for 1043; accept that, refuse anything else that is not a whole number > 0. */
function positiveInteger(value: unknown, name: string): number {
  const number = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isSafeInteger(number) || number <= 0) {
    throw new ArgumentError(
      `${name} must be a positive whole number, e.g. 1043 (got ${JSON.stringify(value) ?? 'nothing'}).`,
    );
  }
  return number;
}
