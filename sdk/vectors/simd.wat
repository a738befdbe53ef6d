;; Dot-product kernels of Keel's vector searches (memory recall, knowledge store), in WebAssembly SIMD.
;; The compiled bytes are in simd-module.ts (`node scripts/simd.mjs` writes them; a test checks they match).
;;
;; Both functions score `rows` rows laid out one after another, `stride` bytes apart, against one query of the
;; same stride, and write one 32-bit result per row at `out`. Rows and query are zero-padded to the stride, so
;; padding adds nothing to a dot product.
(module
  (memory (export "memory") 1)

  ;; int8 rows and query, stride a multiple of 16 bytes, values in -127..127 (two products of such values never
  ;; overflow an i16 lane); one i32 per row.
  (func (export "dotI8") (param $data i32) (param $q i32) (param $stride i32) (param $rows i32) (param $out i32)
    (local $end i32) (local $j i32) (local $acc v128) (local $x v128) (local $y v128)
    (local.set $end (i32.add (local.get $out) (i32.shl (local.get $rows) (i32.const 2))))
    (block $done
      (loop $row
        (br_if $done (i32.ge_u (local.get $out) (local.get $end)))
        (local.set $acc (v128.const i32x4 0 0 0 0))
        (local.set $j (i32.const 0))
        (loop $col
          (local.set $x (v128.load (i32.add (local.get $data) (local.get $j))))
          (local.set $y (v128.load (i32.add (local.get $q) (local.get $j))))
          (local.set $acc
            (i32x4.add (local.get $acc)
              (i32x4.extadd_pairwise_i16x8_s
                (i16x8.add
                  (i16x8.extmul_low_i8x16_s (local.get $x) (local.get $y))
                  (i16x8.extmul_high_i8x16_s (local.get $x) (local.get $y))))))
          (local.set $j (i32.add (local.get $j) (i32.const 16)))
          (br_if $col (i32.lt_u (local.get $j) (local.get $stride))))
        (i32.store (local.get $out)
          (i32.add
            (i32.add (i32x4.extract_lane 0 (local.get $acc)) (i32x4.extract_lane 1 (local.get $acc)))
            (i32.add (i32x4.extract_lane 2 (local.get $acc)) (i32x4.extract_lane 3 (local.get $acc)))))
        (local.set $data (i32.add (local.get $data) (local.get $stride)))
        (local.set $out (i32.add (local.get $out) (i32.const 4)))
        (br $row))))

  ;; float32 rows and query, stride a multiple of 32 bytes; one f32 per row (two accumulators of four lanes).
  (func (export "dotF32") (param $data i32) (param $q i32) (param $stride i32) (param $rows i32) (param $out i32)
    (local $end i32) (local $j i32) (local $a v128) (local $b v128)
    (local.set $end (i32.add (local.get $out) (i32.shl (local.get $rows) (i32.const 2))))
    (block $done
      (loop $row
        (br_if $done (i32.ge_u (local.get $out) (local.get $end)))
        (local.set $a (v128.const f32x4 0 0 0 0))
        (local.set $b (v128.const f32x4 0 0 0 0))
        (local.set $j (i32.const 0))
        (loop $col
          (local.set $a
            (f32x4.add (local.get $a)
              (f32x4.mul
                (v128.load (i32.add (local.get $data) (local.get $j)))
                (v128.load (i32.add (local.get $q) (local.get $j))))))
          (local.set $b
            (f32x4.add (local.get $b)
              (f32x4.mul
                (v128.load offset=16 (i32.add (local.get $data) (local.get $j)))
                (v128.load offset=16 (i32.add (local.get $q) (local.get $j))))))
          (local.set $j (i32.add (local.get $j) (i32.const 32)))
          (br_if $col (i32.lt_u (local.get $j) (local.get $stride))))
        (local.set $a (f32x4.add (local.get $a) (local.get $b)))
        (f32.store (local.get $out)
          (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $a)) (f32x4.extract_lane 1 (local.get $a)))
            (f32.add (f32x4.extract_lane 2 (local.get $a)) (f32x4.extract_lane 3 (local.get $a)))))
        (local.set $data (i32.add (local.get $data) (local.get $stride)))
        (local.set $out (i32.add (local.get $out) (i32.const 4)))
        (br $row))))
)
