-- What Nimbus keeps about a customer across conversations (see notes-queries.ts).
-- Created by every command's first run, after schema.sql, like it: only what is missing, never dropped.
-- Works on MySQL 8+ and MariaDB 10.6+:   mysql -u root -p nimbus < going-further/notes/customer-memory.sql

-- What a customer asked Nimbus to remember ("always email me, never call"), in their own words.
-- Never what the store's own tables hold (orders, refunds, tickets): the tools fetch those fresh.
CREATE TABLE IF NOT EXISTS customer_notes (
  id              INT UNSIGNED NOT NULL AUTO_INCREMENT,
  -- Whose note: always the signed-in customer, never someone the model named.
  customer_id     INT UNSIGNED NOT NULL,
  -- One short sentence, whitespace tidied. The collation ignores case, so the unique key below
  -- makes "Always email me" and "always email me" one note.
  text            VARCHAR(300) NOT NULL,
  -- The conversation it was said in: forgetting that conversation forgets the note. No foreign key:
  -- a note is written during a question, before a new conversation's first turn creates its row.
  conversation_id CHAR(32)     CHARACTER SET ascii NULL,
  created_at      DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  -- Last sent with a question: prune.ts deletes notes no question has needed for N days.
  recalled_at     DATETIME(3)  NULL,
  -- The last day it applies ("away until the 20th"), if the customer said; after it, it is never sent.
  expires_on      DATE         NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uq_customer_notes_text (customer_id, text),
  KEY idx_customer_notes_conversation (conversation_id),
  -- A customer's data goes with them: deleting the customer deletes their notes.
  CONSTRAINT fk_customer_notes_customer FOREIGN KEY (customer_id) REFERENCES customers (id) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- One row per customer whose notes ever changed: saveNote writes it first, in the same transaction.
-- Why a row that is written, and not a lock: "at most 20 live notes" is a count, checked before the
-- insert, and a row lock (SELECT … FOR UPDATE) holds only on the database node that took it, so on a
-- cluster two saves on two nodes would both count 19 and both insert. Every save writes this row, so two
-- saves at once always collide: on one server the second waits for the first, on a cluster the second
-- to commit fails (errno 1213) and is run again whole, counting the first one's note. A unique key on
-- "slots" cannot say it: a note stops counting the day it expires, without any row changing.
CREATE TABLE IF NOT EXISTS customer_note_guards (
  customer_id INT UNSIGNED    NOT NULL,
  -- How many times the customer's notes were changed: what makes every save a write of this row.
  changes     BIGINT UNSIGNED NOT NULL DEFAULT 0,
  PRIMARY KEY (customer_id),
  CONSTRAINT fk_customer_note_guards_customer FOREIGN KEY (customer_id) REFERENCES customers (id) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;
