-- One question at a time per conversation, as rows every database node sees (lease.ts).
-- Created by the full Nimbus's first run, like customer-memory.sql: only when missing, never dropped.
-- Works on MySQL 8+ and MariaDB 10.6+:   mysql -u root -p nimbus < going-further/question/question-leases.sql

-- A row while a question is being answered in a conversation, or while an erasure or a reset holds it.
-- Not a MySQL named lock (GET_LOCK): that belongs to one connection on one server, so it ties up a
-- pool connection for the whole turn, vanishes when the connection drops, and each cluster node has its own.
CREATE TABLE IF NOT EXISTS question_leases (
  -- No foreign key to conversations: a new conversation has no row until its first step is saved.
  conversation_id CHAR(32)     CHARACTER SET ascii NOT NULL,
  -- Whose conversation: an erasure of this customer finds the questions in flight, new ones included.
  customer_id     INT UNSIGNED NOT NULL,
  -- Who holds it: a random token per question (or per erasure). Saves check it's still theirs.
  holder          CHAR(32)     CHARACTER SET ascii NOT NULL,
  -- Renewed while the question runs; a crashed process's lease is free again after it.
  expires_at      DATETIME(3)  NOT NULL,
  PRIMARY KEY (conversation_id),
  KEY idx_question_leases_customer (customer_id),
  CONSTRAINT fk_question_leases_customer FOREIGN KEY (customer_id) REFERENCES customers (id) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- While an erasure of a customer runs (forget.ts --customer, forget_everything), a question of theirs
-- that starts meanwhile waits until it is over: otherwise it could read what is being deleted (a
-- note, recalled) and write it back after the erasure, in a conversation of its own. Taking a
-- question's lease changes this row (questions + 1) in the same transaction, so a question and an
-- erasure on two cluster nodes collide at COMMIT instead of missing each other.
CREATE TABLE IF NOT EXISTS customer_erasures (
  customer_id   INT UNSIGNED    NOT NULL,
  -- Set by an erasure while it runs; it expires, so a crashed erasure holds no customer for long.
  erasing_until DATETIME(3)     NULL,
  -- How many erasures of this customer run at once: the mark is cleared when the last one ends.
  erasures      INT UNSIGNED    NOT NULL DEFAULT 0,
  questions     BIGINT UNSIGNED NOT NULL DEFAULT 0,
  PRIMARY KEY (customer_id),
  CONSTRAINT fk_customer_erasures_customer FOREIGN KEY (customer_id) REFERENCES customers (id) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;
