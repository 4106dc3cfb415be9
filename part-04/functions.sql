-- The refund rule lives in the database, next to the data it judges, so every caller gets the same
-- answer: the agent's tool, a report, or a person at the mysql prompt. Try:
--   SELECT id, status, refund_reason(status, paid_at) FROM orders;
-- Run after schema.sql:   mysql -u root -p nimbus < functions.sql   (nimbus: your DB_NAME)
--
-- MySQL 8 with binary logging asks every function to declare what it does with data; NO SQL says
-- "computes from its arguments only". (A non-root user there may also need
-- log_bin_trust_function_creators=1.)

DROP FUNCTION IF EXISTS refund_reason;
DROP FUNCTION IF EXISTS is_refund_eligible;
DROP FUNCTION IF EXISTS refund_days_left;
DROP FUNCTION IF EXISTS days_since_purchase;
DROP FUNCTION IF EXISTS refund_window_days;

-- The store's refund window. Day 14 after payment is the last day a refund can be asked for.
CREATE FUNCTION refund_window_days() RETURNS INT
  DETERMINISTIC NO SQL
  RETURN 14;

-- Whole calendar days since payment: 0 on the day of payment, NULL if never paid.
CREATE FUNCTION days_since_purchase(p_paid_at DATETIME) RETURNS INT
  NOT DETERMINISTIC NO SQL
  RETURN DATEDIFF(NOW(), p_paid_at);

-- Days left to ask for a refund: 0 on the last day, negative once the window has closed.
CREATE FUNCTION refund_days_left(p_paid_at DATETIME) RETURNS INT
  NOT DETERMINISTIC NO SQL
  RETURN refund_window_days() - days_since_purchase(p_paid_at);

-- The bodies below contain ";", so the statement terminator changes to $$ while they are defined.
DELIMITER $$

CREATE FUNCTION is_refund_eligible(p_status VARCHAR(20), p_paid_at DATETIME) RETURNS BOOLEAN
  NOT DETERMINISTIC NO SQL
BEGIN
  -- Only money we actually took, inside the window, can be refunded.
  RETURN p_status IN ('paid', 'shipped', 'delivered')
     AND p_paid_at IS NOT NULL
     AND refund_days_left(p_paid_at) >= 0;
END$$

-- One sentence a person (or the model) can read, saying why an order is or is not eligible.
CREATE FUNCTION refund_reason(p_status VARCHAR(20), p_paid_at DATETIME) RETURNS VARCHAR(255)
  NOT DETERMINISTIC NO SQL
BEGIN
  DECLARE days_left INT DEFAULT refund_days_left(p_paid_at);
  CASE
    WHEN p_status = 'pending' THEN
      RETURN 'Not paid yet, so there is nothing to refund; a pending order can be cancelled instead.';
    WHEN p_status = 'cancelled' THEN
      RETURN 'The order was cancelled, so there is nothing to refund.';
    WHEN p_status = 'refunded' THEN
      RETURN 'The order has already been refunded.';
    WHEN p_paid_at IS NULL THEN
      RETURN 'There is no payment on record for this order.';
    WHEN days_left < 0 THEN
      RETURN CONCAT('Paid ', days_since_purchase(p_paid_at), ' days ago, outside the ',
                    refund_window_days(), '-day refund window.');
    WHEN days_left = 0 THEN
      RETURN 'Paid and within the refund window: today is the last day.';
    WHEN days_left = 1 THEN
      RETURN 'Paid and within the refund window (1 day left).';
    ELSE
      RETURN CONCAT('Paid and within the refund window (', days_left, ' days left).');
  END CASE;
END$$

DELIMITER ;
