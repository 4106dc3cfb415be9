-- The store's tables: customers, products, orders and their items, support tickets, the help center,
-- and the assistant's memory: conversations and their messages.
-- Safe to run again: it creates only the tables that are missing and never drops or changes one
-- (setup.ts resets the database when you ask it to).
-- Works on MySQL 8+ and MariaDB 10.6+:   mysql -u root -p nimbus < schema.sql   (nimbus: your DB_NAME)

-- utf8mb4 stores any character, emoji included; MySQL's old "utf8" stops at 3 bytes.
CREATE TABLE IF NOT EXISTS customers (
  id         INT UNSIGNED NOT NULL AUTO_INCREMENT,
  name       VARCHAR(100) NOT NULL,
  email      VARCHAR(255) NOT NULL,
  created_at DATETIME     NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (id),
  UNIQUE KEY uq_customers_email (email)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS products (
  id    INT UNSIGNED  NOT NULL AUTO_INCREMENT,
  sku   VARCHAR(32)   NOT NULL,
  name  VARCHAR(200)  NOT NULL,
  -- Money is DECIMAL: exact cents. FLOAT would turn 0.10 + 0.20 into 0.30000000000000004.
  price DECIMAL(10,2) NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uq_products_sku (sku),
  CONSTRAINT chk_products_price CHECK (price >= 0)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS orders (
  id            INT UNSIGNED  NOT NULL AUTO_INCREMENT,
  customer_id   INT UNSIGNED  NOT NULL,
  status        ENUM('pending', 'paid', 'shipped', 'delivered', 'cancelled', 'refunded') NOT NULL,
  created_at    DATETIME      NOT NULL,
  -- The purchase date: payment confirmed. NULL while pending. The refund window counts from here.
  paid_at       DATETIME      NULL,
  shipped_at    DATETIME      NULL,
  delivered_at  DATETIME      NULL,
  shipping_cost DECIMAL(10,2) NOT NULL DEFAULT 0,
  PRIMARY KEY (id),
  -- "All orders of this customer, newest first" is the common question.
  KEY idx_orders_customer (customer_id, created_at),
  CONSTRAINT fk_orders_customer FOREIGN KEY (customer_id) REFERENCES customers (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci AUTO_INCREMENT = 1001;

CREATE TABLE IF NOT EXISTS order_items (
  order_id   INT UNSIGNED      NOT NULL,
  product_id INT UNSIGNED      NOT NULL,
  quantity   SMALLINT UNSIGNED NOT NULL,
  -- The price paid, copied at purchase time: a later price change must not rewrite old orders.
  unit_price DECIMAL(10,2)     NOT NULL,
  PRIMARY KEY (order_id, product_id),
  KEY idx_order_items_product (product_id),
  CONSTRAINT fk_order_items_order FOREIGN KEY (order_id) REFERENCES orders (id) ON DELETE CASCADE,
  CONSTRAINT fk_order_items_product FOREIGN KEY (product_id) REFERENCES products (id),
  CONSTRAINT chk_order_items_quantity CHECK (quantity > 0)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- Requests for a person: refunds, damaged items, anything the assistant cannot settle itself.
CREATE TABLE IF NOT EXISTS tickets (
  id          INT UNSIGNED NOT NULL AUTO_INCREMENT,
  -- Whose ticket it is: always the signed-in customer, never someone the model named.
  customer_id INT UNSIGNED NOT NULL,
  category    ENUM('refund', 'return', 'exchange', 'shipping', 'damaged_item', 'warranty',
                   'billing', 'account', 'other') NOT NULL,
  -- Written by the model from the customer's words: any text, so TEXT in utf8mb4.
  summary     TEXT         NOT NULL,
  order_id    INT UNSIGNED NULL,
  status      ENUM('open', 'in_progress', 'closed') NOT NULL DEFAULT 'open',
  created_at  DATETIME     NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (id),
  -- "Does this customer already have an open ticket about this?" is asked before every new one.
  KEY idx_tickets_customer (customer_id, status),
  KEY idx_tickets_order (order_id),
  CONSTRAINT fk_tickets_customer FOREIGN KEY (customer_id) REFERENCES customers (id),
  CONSTRAINT fk_tickets_order FOREIGN KEY (order_id) REFERENCES orders (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci AUTO_INCREMENT = 5001;

-- One row per help-center article (a Markdown file). The hash of the file tells ingest whether
-- anything changed since the last run.
CREATE TABLE IF NOT EXISTS help_articles (
  id           INT UNSIGNED NOT NULL AUTO_INCREMENT,
  slug         VARCHAR(100) NOT NULL,
  title        VARCHAR(200) NOT NULL,
  content_hash CHAR(64)     NOT NULL,
  updated_at   DATETIME     NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (id),
  UNIQUE KEY uq_help_articles_slug (slug)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- Articles cut into passages small enough to search and to quote. Each passage has its own
-- embedding: a vector of numbers that places texts with similar meaning close together.
CREATE TABLE IF NOT EXISTS help_chunks (
  id              INT UNSIGNED      NOT NULL AUTO_INCREMENT,
  article_id      INT UNSIGNED      NOT NULL,
  position        SMALLINT UNSIGNED NOT NULL,
  text            TEXT              NOT NULL,
  -- The hash of `text`: an unchanged passage keeps its embedding when its article is edited.
  content_hash    CHAR(64)          NOT NULL,
  -- 32-bit floats, packed: 4 bytes a number instead of ~20 as JSON text. NULL until indexed.
  embedding       MEDIUMBLOB        NULL,
  -- Which model made the vector: vectors from different models cannot be compared.
  embedding_model VARCHAR(100)      NULL,
  dimensions      SMALLINT UNSIGNED NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uq_help_chunks_position (article_id, position),
  KEY idx_help_chunks_model (embedding_model),
  -- Keyword search, for when no embedding model is available.
  FULLTEXT KEY ft_help_chunks_text (text),
  CONSTRAINT fk_help_chunks_article FOREIGN KEY (article_id) REFERENCES help_articles (id) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- One row per conversation, created when its first step is saved; it belongs to one customer.
CREATE TABLE IF NOT EXISTS conversations (
  id          CHAR(32)     CHARACTER SET ascii NOT NULL,
  customer_id INT UNSIGNED NOT NULL,
  created_at  DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at  DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (id),
  KEY idx_conversations_customer (customer_id, updated_at),
  KEY idx_conversations_updated (updated_at),
  CONSTRAINT fk_conversations_customer FOREIGN KEY (customer_id) REFERENCES customers (id) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- Every message of every conversation, in the neutral format, provider_raw included. The system
-- prompt is never stored: it is added fresh to each request, so prompt changes reach old conversations.
CREATE TABLE IF NOT EXISTS messages (
  conversation_id CHAR(32)        CHARACTER SET ascii NOT NULL,
  -- Its place in the conversation, 1, 2, 3…: an order on every engine (TiDB hands out AUTO_INCREMENT
  -- ids per server), and two writers that both think they write message 7 collide instead of mixing.
  seq             INT UNSIGNED    NOT NULL,
  role            ENUM('user', 'assistant', 'tool') NOT NULL,
  -- The whole message. (MariaDB stores JSON as LONGTEXT; the code accepts a string or an object.)
  data            JSON            NOT NULL,
  -- For a message the model wrote: what its call cost, as the provider counted it.
  input_tokens    INT UNSIGNED    NULL,
  output_tokens   INT UNSIGNED    NULL,
  created_at      DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (conversation_id, seq), -- one conversation's messages, in order: one range
  CONSTRAINT fk_messages_conversation FOREIGN KEY (conversation_id) REFERENCES conversations (id) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;
