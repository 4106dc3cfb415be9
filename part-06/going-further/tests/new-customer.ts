// Test helper: a customer of the test's own, so an erasure or a wait in one test touches no other test's customer.
import { randomBytes } from 'node:crypto';
import type { ResultSetHeader } from 'mysql2';
import { query } from '../../../shared/db.ts';
import type { Customer } from '../../session.ts';

/** A new customer in the current database, with an address of its own (for --customer=). */
export async function newCustomer(label = 'test'): Promise<Customer> {
  const email = `${label}-${randomBytes(4).toString('hex')}@example.com`;
  const inserted = await query<ResultSetHeader>(
    "INSERT INTO customers (name, email) VALUES ('Test Customer', ?)",
    [email],
  );
  return { id: inserted.insertId, name: 'Test Customer', email };
}

/** A support ticket of hers, as the store keeps one. */
export async function ticketOf(customer: Customer, summary = 'Call back'): Promise<number> {
  const inserted = await query<ResultSetHeader>(
    "INSERT INTO tickets (customer_id, category, summary) VALUES (?, 'other', ?)",
    [customer.id, summary],
  );
  return inserted.insertId;
}
