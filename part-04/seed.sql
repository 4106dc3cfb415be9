-- A small, believable store. Dates are relative to when you run this file, so the chapters'
-- examples stay true: order 1043 was paid 20 days ago, order 1042 (same customer) 3 days ago.
--   mysql -u root -p nimbus < seed.sql   (nimbus: your DB_NAME; after schema.sql, into empty tables)

INSERT INTO customers (id, name, email, created_at) VALUES
  (1, 'Maya Patel',    'maya.patel@example.com',    NOW() - INTERVAL 90 DAY),
  (2, 'Liam O''Brien', 'liam.obrien@example.com',   NOW() - INTERVAL 200 DAY),
  (3, 'Sofia García',  'sofia.garcia@example.com',  NOW() - INTERVAL 150 DAY),
  (4, 'Noah Kim',      'noah.kim@example.com',      NOW() - INTERVAL 120 DAY),
  (5, 'Amara Okafor',  'amara.okafor@example.com',  NOW() - INTERVAL 100 DAY),
  (6, 'Jonas Weber',   'jonas.weber@example.com',   NOW() - INTERVAL 80 DAY),
  (7, 'Chloe Martin',  'chloe.martin@example.com',  NOW() - INTERVAL 60 DAY),
  (8, 'Ravi Shah',     'ravi.shah@example.com',     NOW() - INTERVAL 40 DAY);

INSERT INTO products (id, sku, name, price) VALUES
  (1,  'KE-HP-01',   'Aria Wireless Headphones',    129.00),
  (2,  'KE-CH-65',   '65W USB-C Charger',            39.90),
  (3,  'KE-LS-01',   'Aluminium Laptop Stand',       49.00),
  (4,  'KE-KB-87',   'Mechanical Keyboard (87 keys)', 89.00),
  (5,  'KE-MS-02',   'Silent Wireless Mouse',        24.90),
  (6,  'KE-MN-27',   '27-inch 4K Monitor',          329.00),
  (7,  'KE-WC-1080', '1080p Webcam',                 59.00),
  (8,  'KE-SSD-1T',  'Portable SSD 1 TB',            99.00),
  (9,  'KE-SP-MINI', 'Smart Speaker Mini',           49.90),
  (10, 'KE-ER-6',    'E-Reader 6-inch',             119.00),
  (11, 'KE-PC-15',   'Clear Phone Case',             14.90),
  (12, 'KE-PB-20K',  'Power Bank 20,000 mAh',        45.00),
  (13, 'KE-HDMI-2',  'HDMI 2.1 Cable (2 m)',         12.90),
  (14, 'KE-BT-GO',   'Bluetooth Speaker Go',         69.00),
  (15, 'KE-SW-2',    'Smartwatch Series 2',         199.00);

-- Card orders are paid when placed; pending orders wait for a bank transfer.
-- Shipping is free from $50, otherwise $4.99.
INSERT INTO orders (id, customer_id, status, created_at, paid_at, shipped_at, delivered_at, shipping_cost) VALUES
  (1030, 2, 'delivered', NOW() - INTERVAL 60 DAY, NOW() - INTERVAL 60 DAY, NOW() - INTERVAL 59 DAY, NOW() - INTERVAL 56 DAY, 0.00),
  (1031, 3, 'refunded',  NOW() - INTERVAL 40 DAY, NOW() - INTERVAL 40 DAY, NOW() - INTERVAL 39 DAY, NOW() - INTERVAL 36 DAY, 0.00),
  (1032, 4, 'cancelled', NOW() - INTERVAL 30 DAY, NULL,                    NULL,                    NULL,                    4.99),
  (1033, 5, 'delivered', NOW() - INTERVAL 28 DAY, NOW() - INTERVAL 28 DAY, NOW() - INTERVAL 27 DAY, NOW() - INTERVAL 24 DAY, 0.00),
  (1034, 6, 'delivered', NOW() - INTERVAL 22 DAY, NOW() - INTERVAL 22 DAY, NOW() - INTERVAL 21 DAY, NOW() - INTERVAL 18 DAY, 0.00),
  (1035, 7, 'delivered', NOW() - INTERVAL 15 DAY, NOW() - INTERVAL 15 DAY, NOW() - INTERVAL 14 DAY, NOW() - INTERVAL 11 DAY, 0.00),
  (1036, 8, 'delivered', NOW() - INTERVAL 14 DAY, NOW() - INTERVAL 14 DAY, NOW() - INTERVAL 13 DAY, NOW() - INTERVAL 10 DAY, 4.99),
  (1037, 2, 'delivered', NOW() - INTERVAL 13 DAY, NOW() - INTERVAL 13 DAY, NOW() - INTERVAL 12 DAY, NOW() - INTERVAL 9 DAY,  0.00),
  (1038, 3, 'shipped',   NOW() - INTERVAL 9 DAY,  NOW() - INTERVAL 9 DAY,  NOW() - INTERVAL 8 DAY,  NULL,                    0.00),
  (1039, 4, 'paid',      NOW() - INTERVAL 1 DAY,  NOW() - INTERVAL 1 DAY,  NULL,                    NULL,                    4.99),
  (1040, 5, 'pending',   NOW() - INTERVAL 1 DAY,  NULL,                    NULL,                    NULL,                    4.99),
  (1041, 6, 'refunded',  NOW() - INTERVAL 10 DAY, NOW() - INTERVAL 10 DAY, NOW() - INTERVAL 9 DAY,  NOW() - INTERVAL 6 DAY,  4.99),
  (1042, 1, 'shipped',   NOW() - INTERVAL 3 DAY,  NOW() - INTERVAL 3 DAY,  NOW() - INTERVAL 2 DAY,  NULL,                    0.00),
  (1043, 1, 'delivered', NOW() - INTERVAL 20 DAY, NOW() - INTERVAL 20 DAY, NOW() - INTERVAL 19 DAY, NOW() - INTERVAL 16 DAY, 0.00),
  (1044, 7, 'paid',      NOW(),                   NOW(),                   NULL,                    NULL,                    4.99),
  (1045, 8, 'pending',   NOW() - INTERVAL 2 DAY,  NULL,                    NULL,                    NULL,                    0.00),
  (1046, 2, 'cancelled', NOW() - INTERVAL 5 DAY,  NOW() - INTERVAL 5 DAY,  NULL,                    NULL,                    0.00),
  (1047, 3, 'delivered', NOW() - INTERVAL 6 DAY,  NOW() - INTERVAL 6 DAY,  NOW() - INTERVAL 5 DAY,  NOW() - INTERVAL 2 DAY,  4.99),
  (1048, 4, 'shipped',   NOW() - INTERVAL 4 DAY,  NOW() - INTERVAL 4 DAY,  NOW() - INTERVAL 3 DAY,  NULL,                    0.00),
  (1049, 5, 'delivered', NOW() - INTERVAL 35 DAY, NOW() - INTERVAL 35 DAY, NOW() - INTERVAL 34 DAY, NOW() - INTERVAL 31 DAY, 0.00);

INSERT INTO order_items (order_id, product_id, quantity, unit_price) VALUES
  (1030, 4, 1, 89.00),  (1030, 5, 1, 24.90),
  (1031, 10, 1, 119.00),
  (1032, 13, 2, 12.90),
  (1033, 6, 1, 329.00), (1033, 13, 1, 12.90),
  (1034, 8, 1, 99.00),
  (1035, 14, 1, 69.00),
  (1036, 12, 1, 45.00),
  (1037, 7, 1, 59.00),
  (1038, 15, 1, 199.00),
  (1039, 3, 1, 49.00),
  (1040, 9, 1, 49.90),
  (1041, 2, 1, 39.90),
  (1042, 12, 1, 45.00), (1042, 2, 1, 39.90),
  (1043, 1, 1, 129.00),
  (1044, 5, 2, 24.90),
  (1045, 10, 1, 119.00),
  (1046, 6, 1, 329.00),
  (1047, 11, 1, 14.90), (1047, 13, 1, 12.90),
  (1048, 14, 1, 69.00), (1048, 11, 1, 14.90),
  (1049, 4, 1, 89.00);
