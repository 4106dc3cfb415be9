-- The store's tables: customers, products, orders and their items.
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
