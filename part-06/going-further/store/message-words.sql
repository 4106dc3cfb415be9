-- The word index of customers' own messages (message-words.ts writes it with the messages it indexes).
-- Created by every command's first run, after schema.sql, like it: only what is missing, never dropped.
-- Works on MySQL 8+ and MariaDB 10.6+:   mysql -u root -p nimbus < going-further/store/message-words.sql

-- Each word of a customer's questions and Nimbus's answers, with where it was said: how
-- search_past_conversations finds her earlier conversations (past-conversations.ts). Filled when a
-- message is saved, in the same transaction, and deleted with its message. The key starts with the
-- customer, so a search reads her own words and nobody else's: its cost is her history's, whoever
-- else talks to Nimbus. (FULLTEXT would search every customer's words at once, and cannot index the
-- JSON column the messages are in.)
CREATE TABLE IF NOT EXISTS message_words (
  customer_id     INT UNSIGNED NOT NULL,
  -- Lower case, a plural "s" dropped, exactly as message-words.ts reads words; compared byte for byte.
  word            VARCHAR(40)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  conversation_id CHAR(32)     CHARACTER SET ascii NOT NULL,
  seq             INT UNSIGNED NOT NULL,
  PRIMARY KEY (customer_id, word, conversation_id, seq),
  KEY idx_message_words_message (conversation_id, seq),
  CONSTRAINT fk_message_words_message FOREIGN KEY (conversation_id, seq) REFERENCES messages (conversation_id, seq) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;
