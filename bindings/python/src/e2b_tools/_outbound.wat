;; The outbound gate's helper component (see _outbound.py).
;;
;; wasmtime-py gives Python no hook on the requests of `wasi:http`, and a
;; Python host function cannot call the native `wasi:http` functions it
;; shadows. This component can: it imports the native `wasi:http/types`
;; and `outgoing-handler` and re-exports, lowered and lifted again (wasmtime
;; cannot re-export an imported function as it is), the three functions the
;; gate needs: a request's scheme, its authority, and the native `handle`.
;; The host then defines the component's own `outgoing-handler.handle` in
;; Python: it asks this helper for the scheme and authority, checks them
;; against the allow-list, and either forwards the request to the native
;; `handle` or answers `HTTP-request-denied`.
;;
;; WASI_HTTP_VERSION is replaced by the version the tools component imports.
(component
  (import "wasi:http/types@WASI_HTTP_VERSION" (instance $types
    (export "outgoing-request" (type $req (sub resource)))
    (export "request-options" (type $opts (sub resource)))
    (export "future-incoming-response" (type $fut (sub resource)))
    (type $scheme0 (variant (case "HTTP") (case "HTTPS") (case "other" string)))
    (export "scheme" (type $scheme (eq $scheme0)))
    (type $dnsp0 (record (field "rcode" (option string)) (field "info-code" (option u16))))
    (export "DNS-error-payload" (type $dnsp (eq $dnsp0)))
    (type $tlsp0 (record (field "alert-id" (option u8)) (field "alert-message" (option string))))
    (export "TLS-alert-received-payload" (type $tlsp (eq $tlsp0)))
    (type $fsp0 (record (field "field-name" (option string)) (field "field-size" (option u32))))
    (export "field-size-payload" (type $fsp (eq $fsp0)))
    (type $ec0 (variant
      (case "DNS-timeout") (case "DNS-error" $dnsp) (case "destination-not-found")
      (case "destination-unavailable") (case "destination-IP-prohibited")
      (case "destination-IP-unroutable") (case "connection-refused")
      (case "connection-terminated") (case "connection-timeout")
      (case "connection-read-timeout") (case "connection-write-timeout")
      (case "connection-limit-reached") (case "TLS-protocol-error")
      (case "TLS-certificate-error") (case "TLS-alert-received" $tlsp)
      (case "HTTP-request-denied") (case "HTTP-request-length-required")
      (case "HTTP-request-body-size" (option u64)) (case "HTTP-request-method-invalid")
      (case "HTTP-request-URI-invalid") (case "HTTP-request-URI-too-long")
      (case "HTTP-request-header-section-size" (option u32))
      (case "HTTP-request-header-size" (option $fsp))
      (case "HTTP-request-trailer-section-size" (option u32))
      (case "HTTP-request-trailer-size" $fsp) (case "HTTP-response-incomplete")
      (case "HTTP-response-header-section-size" (option u32))
      (case "HTTP-response-header-size" $fsp)
      (case "HTTP-response-body-size" (option u64))
      (case "HTTP-response-trailer-section-size" (option u32))
      (case "HTTP-response-trailer-size" $fsp)
      (case "HTTP-response-transfer-coding" (option string))
      (case "HTTP-response-content-coding" (option string))
      (case "HTTP-response-timeout") (case "HTTP-upgrade-failed") (case "HTTP-protocol-error")
      (case "loop-detected") (case "configuration-error") (case "internal-error" (option string))))
    (export "error-code" (type $ec (eq $ec0)))
    (export "[method]outgoing-request.scheme" (func (param "self" (borrow $req)) (result (option $scheme))))
    (export "[method]outgoing-request.authority" (func (param "self" (borrow $req)) (result (option string))))
  ))
  (alias export $types "outgoing-request" (type $req))
  (alias export $types "request-options" (type $opts))
  (alias export $types "future-incoming-response" (type $fut))
  (alias export $types "error-code" (type $ec))
  (import "wasi:http/outgoing-handler@WASI_HTTP_VERSION" (instance $handler
    (alias outer 1 $req (type $req0))
    (export "outgoing-request" (type $req (eq $req0)))
    (alias outer 1 $opts (type $opts0))
    (export "request-options" (type $opts (eq $opts0)))
    (alias outer 1 $fut (type $fut0))
    (export "future-incoming-response" (type $fut (eq $fut0)))
    (alias outer 1 $ec (type $ec0))
    (export "error-code" (type $ec (eq $ec0)))
    (export "handle" (func (param "request" (own $req)) (param "options" (option (own $opts)))
      (result (result (own $fut) (error $ec)))))
  ))

  ;; Memory for the lowered calls' results: the return area at 0..64, and
  ;; a bump allocator from 1024 for the strings in them. Each wrapper resets
  ;; it, since everything the previous call allocated has been lifted out.
  (core module $Mem
    (memory (export "memory") 1)
    (global $bump (export "bump") (mut i32) (i32.const 1024))
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)
      (local $p i32) (local $end i32) (local $pages i32)
      (local.set $p (i32.and
        (i32.add (global.get $bump) (i32.sub (local.get 2) (i32.const 1)))
        (i32.sub (i32.const 0) (local.get 2))))
      (local.set $end (i32.add (local.get $p) (local.get 3)))
      ;; No wrap-around past 4 GiB.
      (if (i32.lt_u (local.get $end) (local.get $p)) (then unreachable))
      (local.set $pages (i32.add (i32.shr_u (local.get $end) (i32.const 16)) (i32.const 1)))
      (if (i32.gt_u (local.get $pages) (memory.size))
        (then (if (i32.eq (memory.grow (i32.sub (local.get $pages) (memory.size))) (i32.const -1))
          (then unreachable))))
      (global.set $bump (local.get $end))
      (local.get $p)))
  (core instance $mem (instantiate $Mem))
  (alias core export $mem "memory" (core memory $memory))
  (alias core export $mem "realloc" (core func $realloc))
  (alias export $types "[method]outgoing-request.scheme" (func $scheme))
  (alias export $types "[method]outgoing-request.authority" (func $authority))
  (alias export $handler "handle" (func $handle))
  (core func $scheme_l (canon lower (func $scheme) (memory $memory) (realloc $realloc)))
  (core func $authority_l (canon lower (func $authority) (memory $memory) (realloc $realloc)))
  (core func $handle_l (canon lower (func $handle) (memory $memory) (realloc $realloc)))
  ;; A borrowed handle must be dropped before the lifted call returns.
  (core func $drop_req (canon resource.drop $req))
  (core module $Wrap
    (import "mem" "bump" (global $bump (mut i32)))
    (import "host" "drop-request" (func $drop (param i32)))
    (import "host" "scheme" (func $scheme (param i32 i32)))
    (import "host" "authority" (func $authority (param i32 i32)))
    (import "host" "handle" (func $handle (param i32 i32 i32 i32)))
    (func (export "scheme") (param i32) (result i32)
      (global.set $bump (i32.const 1024))
      (call $scheme (local.get 0) (i32.const 0))
      (call $drop (local.get 0))
      (i32.const 0))
    (func (export "authority") (param i32) (result i32)
      (global.set $bump (i32.const 1024))
      (call $authority (local.get 0) (i32.const 0))
      (call $drop (local.get 0))
      (i32.const 0))
    (func (export "handle") (param i32 i32 i32) (result i32)
      (global.set $bump (i32.const 1024))
      (call $handle (local.get 0) (local.get 1) (local.get 2) (i32.const 0))
      (i32.const 0)))
  (core instance $wrap (instantiate $Wrap
    (with "mem" (instance $mem))
    (with "host" (instance
      (export "scheme" (func $scheme_l))
      (export "authority" (func $authority_l))
      (export "handle" (func $handle_l))
      (export "drop-request" (func $drop_req))))))
  (alias export $types "scheme" (type $scheme_t))
  (func (export "scheme") (param "self" (borrow $req)) (result (option $scheme_t))
    (canon lift (core func $wrap "scheme") (memory $memory) (realloc $realloc)))
  (func (export "authority") (param "self" (borrow $req)) (result (option string))
    (canon lift (core func $wrap "authority") (memory $memory) (realloc $realloc)))
  (func (export "handle") (param "request" (own $req)) (param "options" (option (own $opts)))
    (result (result (own $fut) (error $ec)))
    (canon lift (core func $wrap "handle") (memory $memory) (realloc $realloc)))
)
