// The tools Nimbus may use: what the model is told about each one, and the code that runs it.
//
// The model decides *what* to look up; the session decides *whose* data it may see. So no tool takes a
// customer or an email from the model: the signed-in customer arrives in `context`, from our code, and
// another customer's order looks exactly like one that does not exist.
import type { ResultSetHeader, RowDataPacket } from 'mysql2';
import { query, withTransaction } from '../shared/db.ts';
import type { LlmSettings } from '../shared/config.ts';
import type { ToolCall, ToolDefinition } from '../shared/llm/index.ts';
import type { Conversation } from './memory.ts';
import { searchHelpCenter } from './search-help.ts';
import type { Customer } from './session.ts';

/** Every result is a small JSON object. Failures are results too: `{ error }` is something the model can read. */
export type ToolResult = Record<string, unknown>;

/** What our code hands every tool beside the model's arguments. The model never sees or sets it. */
export interface ToolContext {
  /** The signed-in customer: every lookup is limited to their orders. */
  customer: Customer;
  /** The conversation the question belongs to: where whatever a tool keeps was said. */
  conversation: Conversation;
  /** The provider, for searching the help center by meaning. */
  llm: LlmSettings;
  /** Tickets opened so far for the current question (see MAX_TICKETS_PER_TURN). */
  ticketsOpened: number;
  /** The question's Ctrl-C: a tool that waits on the network (an embedding) stops when it fires. */
  signal?: AbortSignal;
}

/** A tool: what the model is told, and the code that runs it. An entry script may add its own. */
export interface Tool {
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
// list_customer_orders

const listCustomerOrders: Tool = {
  definition: {
    name: 'list_customer_orders',
    description:
      "List the signed-in customer's orders, newest first. Use it when the customer does not know their order number.",
    parameters: { type: 'object', properties: {}, additionalProperties: false },
  },
  async run(_args, context) {
    const orders = await query<
      Array<{ order_id: number; status: string; placed_on: string; total: number }>
    >(
      `SELECT o.id AS order_id, o.status, DATE_FORMAT(o.created_at, '%Y-%m-%d') AS placed_on, ${ORDER_TOTAL} AS total
         FROM orders o WHERE o.customer_id = ? ORDER BY o.created_at DESC, o.id DESC`,
      [context.customer.id],
    );
    return { customer: context.customer.name, orders };
  },
};

// ---------------------------------------------------------------------------------------------------
// check_refund_eligibility

const checkRefundEligibility: Tool = {
  definition: {
    name: 'check_refund_eligibility',
    description:
      'Check whether an order can be refunded under the store rules (14-day window from payment, order status). ' +
      'Returns eligible true/false and the reason. Always call this before saying anything about a refund.',
    parameters: {
      type: 'object',
      properties: { order_id: { type: 'integer', description: 'The order number, e.g. 1043.' } },
      required: ['order_id'],
      additionalProperties: false,
    },
  },
  async run(args, context) {
    const orderId = positiveInteger(args.order_id, 'order_id');
    // The rule itself lives in functions.sql: the database answers, we only pass the question on.
    const rows = await query<
      Array<{
        order_id: number;
        status: string;
        days_since_purchase: number | null;
        eligible: number;
        reason: string;
      }>
    >(
      `SELECT id AS order_id, status, days_since_purchase(paid_at) AS days_since_purchase,
              is_refund_eligible(status, paid_at) AS eligible, refund_reason(status, paid_at) AS reason
         FROM orders WHERE id = ? AND customer_id = ?`,
      [orderId, context.customer.id],
    );
    if (rows.length === 0) return { error: `Order ${orderId} not found` };
    return { ...rows[0], eligible: rows[0].eligible === 1 };
  },
};

// ---------------------------------------------------------------------------------------------------
// create_support_ticket

const TICKET_CATEGORIES = [
  'refund',
  'return',
  'exchange',
  'shipping',
  'damaged_item',
  'warranty',
  'billing',
  'account',
  'other',
];
const MAX_SUMMARY_LENGTH = 2000;
/** New tickets one question may open. A model that loops (or a reply with 300 calls) stops here. */
export const MAX_TICKETS_PER_TURN = 2;

const createSupportTicket: Tool = {
  definition: {
    name: 'create_support_ticket',
    description:
      'Open a support ticket for the signed-in customer so a person from the team follows up. Only call this after ' +
      'the customer has agreed to it. Returns the ticket number to give the customer; if the same request is ' +
      'already open, returns that ticket instead (already_open: true).',
    parameters: {
      type: 'object',
      properties: {
        category: {
          type: 'string',
          enum: TICKET_CATEGORIES,
          description: 'What the ticket is about.',
        },
        summary: {
          type: 'string',
          description: 'One or two sentences for the team: what the customer needs and why.',
        },
        order_id: { type: 'integer', description: 'The order it is about, if any.' },
      },
      required: ['category', 'summary'],
      additionalProperties: false,
    },
  },
  async run(args, context) {
    if (typeof args.category !== 'string' || !TICKET_CATEGORIES.includes(args.category)) {
      throw new ArgumentError(
        `category must be one of ${TICKET_CATEGORIES.join(', ')} (got ${JSON.stringify(args.category) ?? 'nothing'}).`,
      );
    }
    const category = args.category;
    const summary = typeof args.summary === 'string' ? args.summary.trim() : '';
    if (!summary)
      throw new ArgumentError('summary must be a non-empty text saying what the customer needs.');
    if (summary.length > MAX_SUMMARY_LENGTH)
      throw new ArgumentError(`summary must be at most ${MAX_SUMMARY_LENGTH} characters.`);
    const orderId =
      args.order_id === undefined || args.order_id === null
        ? null
        : positiveInteger(args.order_id, 'order_id');
    const customerId = context.customer.id;

    const result = await withTransaction(async (db): Promise<ToolResult> => {
      // Lock the customer's row: two processes opening the same ticket now take turns, so the
      // "already open?" check below cannot be passed by both.
      await db.query('SELECT id FROM customers WHERE id = ? FOR UPDATE', [customerId]);
      if (orderId !== null) {
        const [found] = await db.query<RowDataPacket[]>(
          'SELECT 1 FROM orders WHERE id = ? AND customer_id = ?',
          [orderId, customerId],
        );
        if (found.length === 0) return { error: `Order ${orderId} not found` };
      }
      // Asking twice (a retry, a "yes please" after an interrupted answer) must not open a second ticket.
      const [open] = await db.query<RowDataPacket[]>(
        `SELECT id, status FROM tickets
          WHERE customer_id = ? AND category = ? AND order_id <=> ? AND status <> 'closed' ORDER BY id LIMIT 1`,
        [customerId, category, orderId],
      );
      if (open.length)
        return {
          created: false,
          already_open: true,
          ticket_id: open[0].id,
          status: open[0].status,
        };
      if (context.ticketsOpened >= MAX_TICKETS_PER_TURN) {
        return {
          error: `No more than ${MAX_TICKETS_PER_TURN} new tickets can be opened for one question. Tell the customer the team will follow up on the tickets already opened.`,
        };
      }
      const [inserted] = await db.query<ResultSetHeader>(
        'INSERT INTO tickets (customer_id, category, summary, order_id) VALUES (?, ?, ?, ?)',
        [customerId, category, summary, orderId],
      );
      return { created: true, ticket_id: inserted.insertId, status: 'open' };
    });
    if (result.created) context.ticketsOpened++;
    return result;
  },
};

// ---------------------------------------------------------------------------------------------------
// search_help_center

const MAX_QUERY_LENGTH = 500;

const searchHelpCenterTool: Tool = {
  definition: {
    name: 'search_help_center',
    description:
      "Search Kestrel Electronics' help center: refunds, returns, exchanges, shipping, tracking, cancellations, " +
      'damaged items, warranty, payments, gift cards, accounts, privacy, product care. Returns the best-matching ' +
      'passages with their article titles. Use it for every question about how the store works.',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', description: "The customer's question, or its key words." },
      },
      required: ['query'],
      additionalProperties: false,
    },
  },
  async run(args, context) {
    const text = typeof args.query === 'string' ? args.query.trim() : '';
    if (!text) throw new ArgumentError('query must be a non-empty text.');
    if (text.length > MAX_QUERY_LENGTH)
      throw new ArgumentError(`query must be at most ${MAX_QUERY_LENGTH} characters.`);
    const found = await searchHelpCenter(text, context.llm, context.signal);
    return found.results.length
      ? { ...found }
      : { ...found, note: found.note ?? 'Nothing relevant found in the help center.' };
  },
};

// ---------------------------------------------------------------------------------------------------
// The registry

const TOOLS: Tool[] = [
  getOrderStatus,
  listCustomerOrders,
  checkRefundEligibility,
  createSupportTicket,
  searchHelpCenterTool,
];

/** What the model is told it may call. */
export const TOOL_DEFINITIONS: ToolDefinition[] = TOOLS.map((tool) => tool.definition);

/** Runs one call from the model (`extra`: tools the entry script added). Unknown tools and bad arguments become `{ error }` results. */
export async function runTool(
  call: ToolCall,
  context: ToolContext,
  extra: Tool[] = [],
): Promise<ToolResult> {
  const tools = [...TOOLS, ...extra];
  const tool = tools.find((t) => t.definition.name === call.name);
  if (!tool)
    return {
      error: `Unknown tool "${call.name}". Available: ${tools.map((t) => t.definition.name).join(', ')}.`,
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
