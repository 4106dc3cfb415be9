// Going further: prints everything held about one customer as one JSON object: `npx tsx export-customer.ts --customer=<email>`.
import { parseFlags, runMain, UsageError } from '../../shared/cli.ts';
import { logDir } from '../../shared/config.ts';
import { commandFor } from '../../shared/hints.ts';
import { printableJson } from '../../shared/text.ts';
import { lookUpCustomer } from '../session.ts';
import { checkFullDatabase } from './store/ensure-tables.ts';
import { exportCustomer } from './privacy/customer-data.ts';

const USAGE = `Usage: ${commandFor(import.meta.url, '--customer=<email>')}

Prints, as one JSON object, everything Nimbus holds about one customer: their record, orders,
support tickets, notes, and every conversation with its messages and the path of its trace file
under logs/. The answer to "what do you hold about me?". This is an operator's tool; forget.ts
--customer=<email> deletes the conversations and notes.`;

await runMain(async () => {
  const { values } = parseFlags({ options: { customer: { type: 'string' } } });
  if (values.customer === undefined)
    throw new UsageError('Say whose data to export: --customer=<email>.');
  await checkFullDatabase();
  const customer = await lookUpCustomer(values.customer);
  console.log(printableJson(await exportCustomer(logDir(), customer), 2));
}, USAGE);
