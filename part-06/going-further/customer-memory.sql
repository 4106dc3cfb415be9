-- Going further: what Nimbus keeps about a customer across conversations (see customer-notes.ts).
-- Created by every command's first run, after schema.sql, like it: only what is missing, never dropped.
-- Works on MySQL 8+ and MariaDB 10.6+:   mysql -u root -p nimbus < going-further/customer-memory.sql

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

-- The words of every question and answer, where FULLTEXT can search them: MySQL cannot index a JSON
-- column, and MariaDB's JSON is LONGTEXT. A copy of messages, filled in when a search needs it
-- (past-conversations.ts), and deleted with its message.
CREATE TABLE IF NOT EXISTS message_text (
  conversation_id CHAR(32)     CHARACTER SET ascii NOT NULL,
  seq             INT UNSIGNED NOT NULL,
  role            ENUM('user', 'assistant') NOT NULL,
  text            MEDIUMTEXT   NOT NULL,
  PRIMARY KEY (conversation_id, seq),
  FULLTEXT KEY ft_message_text (text),
  CONSTRAINT fk_message_text_message FOREIGN KEY (conversation_id, seq) REFERENCES messages (conversation_id, seq) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;
