# ruff: noqa: E501 - the outputs are verbatim tool shapes; wrapping them would hide their real layout
"""Realistic tool outputs with the verdict each must get, for the classifier corpus test.

Every text is written in the shape the real tool prints: promtool/Prometheus HTTP API, logcli and
Loki API, Tempo and Jaeger APIs, kubectl, and the GitHub REST API / gh CLI. ``kind`` is
"healthy" (the suspect looks fine), "faulty" (the suspect is failing) or "failed" (the tool call
itself failed or returned nothing).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rca.core.evidence import Verdict

S, R, U = Verdict.SUPPORTS, Verdict.REFUTES, Verdict.INCONCLUSIVE


@dataclass(frozen=True)
class Case:
    tool: str
    kind: str  # healthy | faulty | failed
    expected: Verdict
    text: str
    signals: dict[str, float | int | str | bool] = field(default_factory=dict)
    ok: bool = True
    error: str | None = None
    backend_status: int | None = None
    onset: tuple[float, float] | None = None
    entities: tuple[str, ...] = ()
    structural: bool = False


ONSET = (1_700_000_000.0, 1_700_000_300.0)

CORPUS: list[Case] = [
    # ---------------------------------------------------------------- Prometheus (promtool / API)
    Case("prometheus", "healthy", R, "error_rate: 0.00"),
    Case(
        "prometheus", "healthy", R, 'job:http_error_rate:ratio_rate5m{job="checkout"} => 0 @[1700000123.456]'
    ),
    Case(
        "prometheus",
        "faulty",
        S,
        'job:http_error_rate:ratio_rate5m{job="checkout"} => 0.3712 @[1700000123.456]',
    ),
    Case(
        "prometheus",
        "faulty",
        S,
        '{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"service:error_ratio:rate5m",'
        '"service":"payments"},"value":[1700000123.456,"0.182"]}]}}',
    ),
    Case(
        "prometheus",
        "healthy",
        R,
        '{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"service:error_ratio:rate5m",'
        '"service":"payments"},"value":[1700000123.456,"0"]}]}}',
    ),
    Case("prometheus", "failed", U, '{"status":"success","data":{"resultType":"vector","result":[]}}'),
    Case(
        "prometheus",
        "failed",
        U,
        '{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}',
    ),
    Case(
        "prometheus",
        "failed",
        U,
        '{"status":"error","errorType":"bad_data","error":"1:45: parse error: unexpected right parenthesis \')\'"}',
    ),
    Case(
        "prometheus",
        "faulty",
        S,
        'kube_pod_container_status_restarts_total{container="api",namespace="shop",pod="cart-6d5f7c9b8-q2w7x"} 14',
    ),
    Case(
        "prometheus",
        "healthy",
        R,
        'kube_pod_container_status_restarts_total{container="api",namespace="shop",pod="cart-6d5f7c9b8-q2w7x"} 0',
    ),
    Case(
        "prometheus",
        "faulty",
        S,
        'kube_deployment_status_replicas_unavailable{deployment="archives-api",namespace="apps"} => 2 @[1700000000]',
    ),
    Case(
        "prometheus",
        "healthy",
        R,
        'kube_deployment_status_replicas_unavailable{deployment="archives-api",namespace="apps"} => 0 @[1700000000]',
    ),
    Case(
        "prometheus",
        "faulty",
        S,
        'probe_success{instance="https://auth.example.org/healthz",job="blackbox"} 0',
    ),
    Case(
        "prometheus",
        "healthy",
        R,
        'probe_success{instance="https://auth.example.org/healthz",job="blackbox"} 1',
    ),
    Case("prometheus", "faulty", S, 'up{instance="lldap:17170",job="lldap"} => 0 @[1700000200.1]'),
    Case("prometheus", "healthy", R, 'up{instance="lldap:17170",job="lldap"} => 1 @[1700000200.1]'),
    Case("prometheus", "faulty", S, "error_rate=0.12 error_rate_baseline=0.004 window=5m service=checkout"),
    Case("prometheus", "healthy", R, "error_rate=0.004 error_rate_baseline=0.004 window=5m service=checkout"),
    Case("prometheus", "faulty", S, "checkout 5xx_rate: 7.5% (last 10m)"),
    Case("prometheus", "healthy", R, "checkout 5xx_rate: 0% (last 10m)"),
    Case("prometheus", "faulty", S, "p99_latency_ms: 2350\np99_latency_baseline_ms: 180"),
    Case("prometheus", "healthy", R, "p99_latency_ms: 185\np99_latency_baseline_ms: 180"),
    Case("prometheus", "healthy", U, "p99_latency_ms: 260\np99_latency_baseline_ms: 180"),
    Case("prometheus", "faulty", S, "latency_p95=1.8s latency_p95_baseline=0.21s"),
    Case("prometheus", "healthy", U, "ERROR_RATE: 0.02 (threshold 0.05)"),
    Case("prometheus", "healthy", R, "Error_Rate: 0.0000\nRequest_Rate: 152.3 req/s"),
    Case("prometheus", "faulty", S, "success_rate: 81.2%\nsuccess_rate_baseline: 99.9%"),
    Case("prometheus", "healthy", R, "success_rate: 99.95%\nsuccess_rate_baseline: 99.9%"),
    Case(
        "prometheus",
        "faulty",
        S,
        'container_oom_events_total{container="worker",namespace="jobs"} => 3 @[1700000000]',
    ),
    Case("prometheus", "healthy", R, "anomaly_score: 0.07 (metric=http_server_duration, service=search)"),
    Case("prometheus", "faulty", S, "anomaly_score: 0.93 (metric=http_server_duration, service=search)"),
    Case("prometheus", "failed", U, "Error executing query: query timed out in query execution"),
    Case("prometheus", "failed", U, "HTTP/1.1 503 Service Unavailable"),
    Case("prometheus", "failed", U, "no data"),
    Case("prometheus", "failed", U, "0 series returned"),
    Case(
        "prometheus",
        "healthy",
        U,
        'sum(rate(http_requests_total{service="checkout"}[5m])) => 152.31 @[1700000000]',
    ),
    Case(
        "prometheus",
        "healthy",
        R,
        'http_requests_total{code="200",handler="/api/cart",service="checkout"} 1.52e+06',
    ),
    Case(
        "prometheus",
        "faulty",
        S,
        'http_requests_total{code="503",handler="/api/cart",service="checkout"} 4821',
    ),
    Case("prometheus", "healthy", R, "timeouts: 0\nretries: 2"),
    Case("prometheus", "healthy", R, "error_rate: 0.00 over 15m; no 5xx responses recorded"),
    # ---------------------------------------------------------------- Loki (logcli / API)
    Case(
        "loki",
        "faulty",
        S,
        '2024-05-02T10:14:03.112Z {app="authelia",namespace="auth"} level=error msg="unable to fetch user details" '
        'error="LDAP Result Code 32 \\"No Such Object\\"" method=POST path=/api/firstfactor status=500',
    ),
    Case(
        "loki",
        "faulty",
        S,
        '2024-05-02T10:14:03Z {app="authelia"} time="2024-05-02T10:14:03Z" level=error msg="Error occurred getting '
        "details for user with username input 'jdoe'\"\n"
        '2024-05-02T10:14:05Z {app="authelia"} time="2024-05-02T10:14:05Z" level=error msg="Unsuccessful 1FA '
        "authentication attempt by user 'jdoe'\"",
    ),
    Case(
        "loki",
        "healthy",
        R,
        '2024-05-02T10:14:03Z {app="authelia"} level=info msg="Successful 1FA authentication attempt made by user" '
        "method=POST path=/api/firstfactor status=200",
    ),
    Case("loki", "failed", U, ""),
    Case("loki", "failed", U, "no log lines matched the query"),
    Case(
        "loki",
        "failed",
        U,
        '{"status":"success","data":{"resultType":"streams","result":[],"stats":{"summary":{"totalLinesProcessed":0}}}}',
    ),
    Case("loki", "failed", U, "Query failed: query timed out after 30s (context deadline exceeded)"),
    Case("loki", "failed", U, "too many outstanding requests"),
    Case("loki", "failed", U, "parse error at line 1, col 17: syntax error: unexpected IDENTIFIER"),
    Case(
        "loki", "failed", U, "max entries limit per query exceeded, limit > max_entries_limit (10000 > 5000)"
    ),
    Case(
        "loki",
        "faulty",
        S,
        'count_over_time({app="checkout"} |= "error" [5m]): errors=1520 errors_baseline=14',
    ),
    Case("loki", "healthy", R, 'count_over_time({app="checkout"} |= "error" [5m]): errors=0'),
    Case("loki", "healthy", R, "error_count: 12\nerror_count_baseline: 11"),
    Case("loki", "faulty", S, "error_count: 480\nerror_count_baseline: 9"),
    Case("loki", "healthy", U, "error_count: 4"),
    Case(
        "loki",
        "faulty",
        S,
        '{"level":"error","ts":"2024-05-02T10:15:00.000Z","logger":"db","msg":"pq: sorry, too many clients already",'
        '"service":"archives-api"}',
    ),
    Case(
        "loki",
        "healthy",
        R,
        '{"level":"info","ts":"2024-05-02T10:15:00.000Z","msg":"request completed","status":200,"error":null,'
        '"service":"archives-api"}',
    ),
    Case(
        "loki",
        "faulty",
        S,
        'ts=2024-05-02T10:15:02Z caller=main.go:88 level=error err="dial tcp 10.42.1.7:5432: connect: connection '
        'refused"',
    ),
    Case(
        "loki",
        "healthy",
        R,
        'ts=2024-05-02T10:15:02Z caller=server.go:120 level=info msg="served" err=<nil> status=200',
    ),
    Case(
        "loki",
        "faulty",
        S,
        "2024/05/02 10:15:04 [error] 31#31: *4521 upstream timed out (110: Connection timed out) while reading "
        "response header from upstream, client: 10.0.3.4, server: shop.example.org, upstream: "
        '"http://10.42.0.15:8080/api/cart"',
    ),
    Case(
        "loki",
        "faulty",
        S,
        'Exception in thread "main" java.lang.OutOfMemoryError: Java heap space\n'
        "\tat java.base/java.util.Arrays.copyOf(Arrays.java:3512)\n\tat com.shop.cart.CartService.load(CartService.java:88)",
    ),
    Case(
        "loki",
        "faulty",
        S,
        'Traceback (most recent call last):\n  File "/app/worker.py", line 41, in run\n    conn = pool.get()\n'
        "psycopg.OperationalError: connection failed: FATAL:  remaining connection slots are reserved",
    ),
    Case(
        "loki",
        "faulty",
        S,
        "panic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation "
        "violation code=0x1 addr=0x0 pc=0x6c1b2e]\n\ngoroutine 1 [running]:",
    ),
    Case("loki", "healthy", R, 'level=INFO msg="health check passed" checks=3 duration=4ms'),
    Case("loki", "healthy", R, "No errors found in the last 15m for app=checkout"),
    Case("loki", "healthy", R, 'Scanned 48213 lines for {app="checkout"}: 0 errors, 0 timeouts, 0 panics'),
    Case("loki", "faulty", S, 'Scanned 48213 lines for {app="checkout"}: 0 errors, 212 timeouts'),
    Case("loki", "healthy", R, "app=checkout: no ERROR or FATAL lines; log volume within normal range"),
    Case("loki", "healthy", R, 'level=warn msg="retrying without any 5xx" attempt=1'),
    Case("loki", "healthy", R, "ERROR log level configured; error_rate: 0.00"),
    Case("loki", "healthy", U, 'level=info msg="error budget report" remaining=99.2%'),
    Case("loki", "healthy", U, 'level=debug msg="registered error handler" route=/api/cart'),
    Case(
        "loki",
        "faulty",
        S,
        "level=error msg=\"schema mismatch: attribute 'memberOf' not found in LDAP schema\" component=lldap",
    ),
    Case(
        "loki",
        "faulty",
        S,
        "WARN  [HikariPool-1] Connection is not available, request timed out after 30000ms.",
    ),
    Case(
        "loki",
        "faulty",
        S,
        "E0502 10:15:09.331201       1 reflector.go:138] failed to list *v1.Pod: Unauthorized",
    ),
    Case("loki", "faulty", S, 'FATAL: password authentication failed for user "archives"'),
    Case("loki", "healthy", R, 'msg="login ok" user=<redacted> mfa=passed status=200'),
    Case(
        "loki",
        "faulty",
        S,
        '10.0.3.4 - - [02/May/2024:10:15:11 +0000] "POST /api/oidc/token HTTP/1.1" 500 87 "-" "Go-http-client/2.0"\n'
        '10.0.3.4 - - [02/May/2024:10:15:12 +0000] "POST /api/oidc/token HTTP/1.1" 500 87 "-" "Go-http-client/2.0"',
    ),
    Case("loki", "faulty", S, 'status=503 msg="upstream connect error or disconnect/reset before headers"'),
    Case("loki", "faulty", S, "grpc: rpc error: code = Unavailable desc = connection error"),
    Case("loki", "faulty", S, "rpc error: code = DeadlineExceeded desc = context deadline exceeded"),
    Case("loki", "healthy", R, "Redis connection pool healthy: 0 timeouts in 10m, 0 refused connections"),
    Case("loki", "faulty", S, "redis: connection pool exhausted"),
    Case("loki", "healthy", R, "Messages processed without errors; consumer lag within expected range"),
    Case("loki", "faulty", S, "nats: consumer lag spiking, 48211 pending messages, slow consumer detected"),
    Case("loki", "healthy", R, 'level=info msg="certificate is valid" not_after=2025-01-01 status=OK'),
    Case(
        "loki",
        "faulty",
        S,
        "x509: certificate has expired or is not yet valid: current time is after 2024-05-01; "
        "TLS handshake failed",
    ),
    Case("loki", "healthy", R, "There were no failures in the last hour and none of the jobs timed out"),
    Case("loki", "faulty", S, "WARNING: the disk quota for /var/lib/postgresql is exhausted"),
    Case("loki", "healthy", R, "The job completed successfully in 42s"),
    # ---------------------------------------------------------------- Tempo / Jaeger
    Case(
        "tempo",
        "faulty",
        S,
        '{"batches":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"authelia"}}]},'
        '"scopeSpans":[{"spans":[{"traceId":"9f1c0a","spanId":"a1","name":"ldap.search","kind":"SPAN_KIND_CLIENT",'
        '"status":{"code":"STATUS_CODE_ERROR","message":"LDAP Result Code 32"}}]}]}]}',
    ),
    Case(
        "tempo",
        "healthy",
        R,
        '{"batches":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"authelia"}}]},'
        '"scopeSpans":[{"spans":[{"traceId":"9f1c0a","spanId":"a1","name":"ldap.search","kind":"SPAN_KIND_CLIENT",'
        '"status":{"code":"STATUS_CODE_OK"}}]}]}]}',
    ),
    Case(
        "tempo",
        "failed",
        U,
        '{"traces":[],"metrics":{"inspectedBytes":"1048576","completedJobs":4,"totalJobs":4}}',
    ),
    Case(
        "tempo",
        "faulty",
        S,
        '{"traces":[{"traceID":"2f3e","rootServiceName":"bluerobin-web","rootTraceName":"GET /login",'
        '"durationMs":5012,"spanSet":{"spans":[{"spanID":"8a","attributes":[{"key":"status","value":'
        '{"stringValue":"error"}}]}],"matched":1}}]}',
    ),
    Case("tempo", "failed", U, "failed to get trace: trace not found (404)\n", ok=False),
    Case("tempo", "faulty", S, "trace 4bf92f35: 17 spans, 3 with status=error; slowest span db.query 4.8s"),
    Case("tempo", "healthy", R, "trace 4bf92f35: 17 spans, 0 with errors; all spans status_code_ok"),
    Case(
        "tempo",
        "faulty",
        S,
        'TraceQL { resource.service.name = "archives-api" && status = error }: 231 spans',
    ),
    Case("tempo", "healthy", R, "span_error_ratio: 0.0 for service.name=archives-api over 15m"),
    Case("tempo", "faulty", S, "span_error_ratio: 0.41 for service.name=archives-api over 15m"),
    Case("tempo", "faulty", S, "p99 duration: 4.2s, p99 duration baseline: 310ms (service=search)"),
    Case("tempo", "healthy", R, "p99 duration: 290ms, p99 duration baseline: 310ms (service=search)"),
    Case(
        "jaeger",
        "faulty",
        S,
        '{"data":[{"traceID":"1f2e3d","spans":[{"operationName":"HTTP GET /inventory","tags":[{"key":"error",'
        '"type":"bool","value":true},{"key":"http.status_code","type":"int64","value":503}]}]}]}',
    ),
    Case(
        "jaeger",
        "healthy",
        R,
        '{"data":[{"traceID":"1f2e3d","spans":[{"operationName":"HTTP GET /inventory","tags":[{"key":"error",'
        '"type":"bool","value":false},{"key":"http.status_code","type":"int64","value":200}]}]}]}',
    ),
    Case("jaeger", "failed", U, '{"data":[],"total":0,"limit":0,"offset":0,"errors":null}'),
    Case(
        "jaeger",
        "failed",
        U,
        '{"data":null,"total":0,"limit":0,"offset":0,"errors":[{"code":404,"msg":"trace not found"}]}',
    ),
    Case(
        "jaeger",
        "faulty",
        S,
        "inventory: 58 of 200 sampled traces contain an error span (otel.status_code=ERROR)",
    ),
    Case("jaeger", "healthy", R, "inventory: none of the 200 sampled traces contain error spans"),
    Case("tempo", "failed", U, "Tempo search failed", error="upstream request timeout"),
    Case("tempo", "failed", U, "<html><body>502 Bad Gateway</body></html>", backend_status=502),
    # ---------------------------------------------------------------- kubectl
    Case(
        "kubectl",
        "faulty",
        S,
        "NAME                          READY   STATUS             RESTARTS        AGE\n"
        "archives-api-7c9d6b8f5-2x8kq   0/1     CrashLoopBackOff   12 (38s ago)    41m\n"
        "archives-api-7c9d6b8f5-h7wlz   1/1     Running            0               41m",
    ),
    Case(
        "kubectl",
        "healthy",
        R,
        "NAME                          READY   STATUS    RESTARTS   AGE\n"
        "archives-api-7c9d6b8f5-2x8kq   1/1     Running   0          41m\n"
        "archives-api-7c9d6b8f5-h7wlz   1/1     Running   0          41m",
    ),
    Case(
        "kubectl",
        "faulty",
        S,
        "NAME                       READY   STATUS      RESTARTS   AGE\n"
        "worker-5b8d9f7c6d-mqz4t    0/1     OOMKilled   3          9m",
    ),
    Case(
        "kubectl",
        "faulty",
        S,
        "NAME                        READY   STATUS             RESTARTS   AGE\n"
        "web-6f7d8c9b5d-k2j4h        0/1     ImagePullBackOff   0          3m",
    ),
    Case(
        "kubectl",
        "healthy",
        R,
        "NAME                      READY   STATUS      RESTARTS   AGE\n"
        "db-migrate-29071440-x7k2q  0/1     Completed   0          2h\n"
        "api-5d9c7b6f8d-p4w2n       1/1     Running     0          2h",
    ),
    Case(
        "kubectl",
        "faulty",
        S,
        "NAME           READY   UP-TO-DATE   AVAILABLE   AGE\n"
        "archives-api   0/3     3            0           12m",
    ),
    Case(
        "kubectl",
        "healthy",
        R,
        "NAME           READY   UP-TO-DATE   AVAILABLE   AGE\n"
        "archives-api   3/3     3            3           12d",
    ),
    Case(
        "kubectl",
        "faulty",
        S,
        "NAMESPACE   NAME                        READY   STATUS    RESTARTS      AGE\n"
        "auth        authelia-6b7c9d8f5b-rx9t2   1/1     Running   5 (12m ago)   3d",
    ),
    Case(
        "kubectl",
        "faulty",
        S,
        "Name:         worker-5b8d9f7c6d-mqz4t\nNamespace:    jobs\nContainers:\n  worker:\n"
        "    State:          Waiting\n      Reason:       CrashLoopBackOff\n    Last State:     Terminated\n"
        "      Reason:       OOMKilled\n      Exit Code:    137\n    Ready:          False\n    Restart Count:  12\n"
        "Events:\n  Type     Reason   Age                 From     Message\n"
        "  ----     ------   ----                ----     -------\n"
        "  Warning  BackOff  2m (x40 over 12m)   kubelet  Back-off restarting failed container",
    ),
    Case(
        "kubectl",
        "healthy",
        R,
        "Name:         api-5d9c7b6f8d-p4w2n\nNamespace:    shop\nStatus:       Running\nContainers:\n  api:\n"
        "    State:          Running\n      Started:      Thu, 02 May 2024 08:01:13 +0000\n    Ready:          True\n"
        "    Restart Count:  0\nConditions:\n  Type              Status\n  Ready             True\nEvents:  <none>",
    ),
    Case(
        "kubectl",
        "faulty",
        S,
        "LAST SEEN   TYPE      REASON      OBJECT                          MESSAGE\n"
        "2m          Warning   Unhealthy   pod/authelia-6b7c9d8f5b-rx9t2   Readiness probe failed: HTTP probe failed "
        "with statuscode: 503\n"
        "1m          Warning   BackOff     pod/authelia-6b7c9d8f5b-rx9t2   Back-off restarting failed container",
    ),
    Case(
        "kubectl",
        "healthy",
        R,
        "LAST SEEN   TYPE     REASON      OBJECT                           MESSAGE\n"
        "12m         Normal   Scheduled   pod/api-5d9c7b6f8d-p4w2n          Successfully assigned shop/api to node-2\n"
        "12m         Normal   Pulled      pod/api-5d9c7b6f8d-p4w2n          Successfully pulled image in 1.2s",
    ),
    Case(
        "kubectl",
        "faulty",
        S,
        "LAST SEEN   TYPE      REASON       OBJECT              MESSAGE\n"
        "4m          Warning   OOMKilling   node/worker-3       Memory cgroup out of memory: Killed process 4121 "
        "(java)",
    ),
    Case(
        "kubectl",
        "faulty",
        S,
        "LAST SEEN   TYPE      REASON             OBJECT                  MESSAGE\n"
        "30s         Warning   FailedScheduling   pod/search-0            0/3 nodes are available: 3 Insufficient "
        "memory.",
    ),
    Case(
        "kubectl",
        "faulty",
        S,
        "LAST SEEN   TYPE      REASON    OBJECT                 MESSAGE\n"
        "1m          Warning   Evicted   pod/cache-7f8d9c-wq2lm   The node was low on resource: memory.",
    ),
    Case("kubectl", "failed", U, "No resources found in shop namespace."),
    Case(
        "kubectl", "failed", U, 'Error from server (NotFound): pods "archives-api-7c9d6b8f5-2x8kq" not found'
    ),
    Case(
        "kubectl",
        "failed",
        U,
        'Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:rca:agent" cannot list '
        'resource "pods" in API group "" in the namespace "kube-system"',
    ),
    Case("kubectl", "failed", U, "Unable to connect to the server: dial tcp 10.0.0.1:6443: i/o timeout"),
    Case("kubectl", "failed", U, 'error: the server doesn\'t have a resource type "kustomizations"'),
    Case(
        "kubectl",
        "faulty",
        S,
        'deployment "archives-api" exceeded its progress deadline\n'
        'Waiting for deployment "archives-api" rollout to finish: 1 of 3 updated replicas are available...',
    ),
    Case("kubectl", "healthy", R, 'deployment "archives-api" successfully rolled out'),
    Case(
        "kubectl",
        "faulty",
        S,
        "Replicas:               3 desired | 3 updated | 3 total | 1 available | 2 unavailable\n"
        "Conditions:\n  Type           Status  Reason\n  Available      False   MinimumReplicasUnavailable",
    ),
    Case(
        "kubectl",
        "healthy",
        R,
        "Replicas:               3 desired | 3 updated | 3 total | 3 available | 0 unavailable\n"
        "Conditions:\n  Type           Status  Reason\n  Available      True    MinimumReplicasAvailable",
    ),
    Case("kubectl", "healthy", R, "pod/api-5d9c7b6f8d-p4w2n is Running, not OOMKilled, 0 restarts"),
    Case(
        "kubectl",
        "faulty",
        S,
        "NAME            READY   STATUS   MESSAGE\n"
        "apps            False   False    kustomize build failed: accumulating resources: missing Resource metadata",
    ),
    Case(
        "kubectl",
        "healthy",
        R,
        "NAME    REVISION              SUSPENDED   READY   MESSAGE\n"
        "apps    main@sha1:4b825dc6    False       True    Applied revision: main@sha1:4b825dc6",
    ),
    Case(
        "kubectl",
        "faulty",
        S,
        "NAME               TYPE           CLUSTER-IP    EXTERNAL-IP   PORT(S)   AGE\n"
        "lldap              ClusterIP      10.43.8.12    <none>        3890/TCP  40d\n"
        "Endpoints: <none> (0/2 pods ready)",
    ),
    Case(
        "kubectl",
        "faulty",
        S,
        'container "api" in pod "api-5d9c7b6f8d-p4w2n" is waiting to start: '
        'CreateContainerConfigError: secret "db-credentials" not found',
    ),
    Case("kubectl", "healthy", R, "all 3 pods are ready and running; nodes healthy"),
    Case("kubectl", "faulty", S, "Node worker-3 status: NotReady (kubelet stopped posting node status)"),
    Case(
        "kubectl",
        "faulty",
        S,
        'Liveness probe failed: Get "http://10.42.1.9:8080/healthz": context deadline '
        "exceeded (Client.Timeout exceeded while awaiting headers)",
    ),
    # ---------------------------------------------------------------- GitHub / changes
    Case(
        "github",
        "faulty",
        S,
        '[{"sha":"3f2a9c1d8e7b6a5f4c3d2e1f0a9b8c7d6e5f4a3b","commit":{"author":{"name":"A Dev","date":'
        '"2024-05-02T10:02:11Z"},"message":"lldap: rename memberOf attribute"}}]',
        signals={"change_in_window": True},
    ),
    Case("github", "failed", U, "[]", signals={"change_in_window": False}),
    Case("github", "healthy", U, "No commits found for bluerobin-web between 08:00 and 10:15 UTC"),
    Case(
        "github",
        "failed",
        U,
        '{"message":"API rate limit exceeded for installation ID 4242.","documentation_url":'
        '"https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting","status":"403"}',
    ),
    Case(
        "github",
        "failed",
        U,
        '{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest","status":"401"}',
    ),
    Case(
        "github",
        "failed",
        U,
        '{"message":"Not Found","documentation_url":"https://docs.github.com/rest/commits/commits#list-commits",'
        '"status":"404"}',
    ),
    Case(
        "github",
        "faulty",
        S,
        "#1842  Bump auth schema to v3 (revert candidate)  feat/schema-v3  MERGED  about 14 minutes ago",
        signals={"change_in_window": True},
    ),
    Case(
        "github",
        "healthy",
        U,
        "#1801  docs: fix typo in README  docs/typo  MERGED  about 3 days ago",
        signals={"change_in_window": False},
    ),
    Case(
        "github",
        "faulty",
        S,
        "✓ Run CI (push) · 8874123 · main\nX deploy-production (push) failed in 2m14s · 8874124 · main\n"
        '  ✗ Rollout archives-api: error: deployment "archives-api" exceeded its progress deadline',
    ),
    Case(
        "github",
        "healthy",
        R,
        "✓ deploy-production (push) · 8874120 · main · completed successfully in 3m02s",
    ),
    Case(
        "github",
        "faulty",
        S,
        'Revert "Bump auth schema to v3" — rolled back after elevated 500s on /api/oidc',
    ),
    Case(
        "github",
        "healthy",
        U,
        "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nAuthor: A Dev\n\n    chore: bump chart version",
    ),
    # ---------------------------------------------------------------- names are not words (issue #20)
    # Entity names that contain cue words: the verdict comes from the signals, never from the name.
    Case(
        "topology",
        "healthy",
        U,
        "topology: timeout-proxy has 1 callers, 0 callees; frontend -> timeout-proxy",
        entities=(
            "timeout-proxy",
            "error-tracker",
            "crash-reporter",
            "oom-guard",
            "deadlock-detector",
            "frontend",
        ),
        structural=True,
    ),
    # The topology lane describes structure: even a fault word in its text never makes it decisive.
    Case(
        "topology",
        "healthy",
        U,
        "topology: error path frontend -> crash-reporter",
        entities=(
            "timeout-proxy",
            "error-tracker",
            "crash-reporter",
            "oom-guard",
            "deadlock-detector",
            "frontend",
        ),
        structural=True,
    ),
    Case(
        "topology",
        "healthy",
        U,
        "",
        signals={"error_rate": 0.4},
        entities=(
            "timeout-proxy",
            "error-tracker",
            "crash-reporter",
            "oom-guard",
            "deadlock-detector",
            "frontend",
        ),
        structural=True,
    ),
    Case(
        "github",
        "healthy",
        U,
        "changes: no change to error-tracker",
        entities=(
            "timeout-proxy",
            "error-tracker",
            "crash-reporter",
            "oom-guard",
            "deadlock-detector",
            "frontend",
        ),
    ),
    Case(
        "github",
        "healthy",
        U,
        "changes: error-tracker unchanged in the window",
        entities=(
            "timeout-proxy",
            "error-tracker",
            "crash-reporter",
            "oom-guard",
            "deadlock-detector",
            "frontend",
        ),
    ),
    Case(
        "github",
        "healthy",
        U,
        "changes: no change to error-tracker",
        signals={"change_in_window": False},
        entities=(
            "timeout-proxy",
            "error-tracker",
            "crash-reporter",
            "oom-guard",
            "deadlock-detector",
            "frontend",
        ),
    ),
    Case(
        "prometheus",
        "healthy",
        U,
        "timeout-proxy: latency 120 ms (baseline 118 ms)",
        entities=(
            "timeout-proxy",
            "error-tracker",
            "crash-reporter",
            "oom-guard",
            "deadlock-detector",
            "frontend",
        ),
    ),
    Case(
        "prometheus",
        "healthy",
        U,
        "metrics: oom-guard cpu normal, memory normal",
        entities=(
            "timeout-proxy",
            "error-tracker",
            "crash-reporter",
            "oom-guard",
            "deadlock-detector",
            "frontend",
        ),
    ),
    Case(
        "prometheus",
        "healthy",
        R,
        "traces: deadlock-detector error rate not elevated",
        entities=(
            "timeout-proxy",
            "error-tracker",
            "crash-reporter",
            "oom-guard",
            "deadlock-detector",
            "frontend",
        ),
    ),
    Case("prometheus", "healthy", R, "error rate not elevated"),
    Case("prometheus", "healthy", R, "errors not elevated"),
    Case("prometheus", "healthy", R, "error count normal"),
    Case("prometheus", "healthy", R, "timeouts remained at baseline"),
    # Zero counts never support, whatever the entity is called.
    Case(
        "loki",
        "healthy",
        R,
        "logs: crash-reporter 0 error lines",
        entities=(
            "timeout-proxy",
            "error-tracker",
            "crash-reporter",
            "oom-guard",
            "deadlock-detector",
            "frontend",
        ),
    ),
    Case(
        "loki",
        "healthy",
        R,
        "logs: no errors found in oom-guard",
        entities=(
            "timeout-proxy",
            "error-tracker",
            "crash-reporter",
            "oom-guard",
            "deadlock-detector",
            "frontend",
        ),
    ),
    Case(
        "loki",
        "healthy",
        R,
        "logs: error-tracker error lines: 0 of 1200",
        entities=(
            "timeout-proxy",
            "error-tracker",
            "crash-reporter",
            "oom-guard",
            "deadlock-detector",
            "frontend",
        ),
    ),
    Case(
        "loki",
        "healthy",
        R,
        "",
        signals={"error_count": 0},
        entities=(
            "timeout-proxy",
            "error-tracker",
            "crash-reporter",
            "oom-guard",
            "deadlock-detector",
            "frontend",
        ),
    ),
    # The same names do not hide a real fault reported next to them.
    Case(
        "loki",
        "faulty",
        S,
        "logs: error-tracker 37 error lines (baseline 2)",
        entities=(
            "timeout-proxy",
            "error-tracker",
            "crash-reporter",
            "oom-guard",
            "deadlock-detector",
            "frontend",
        ),
    ),
    Case(
        "prometheus",
        "faulty",
        S,
        "timeout-proxy: error rate elevated",
        entities=(
            "timeout-proxy",
            "error-tracker",
            "crash-reporter",
            "oom-guard",
            "deadlock-detector",
            "frontend",
        ),
    ),
    # ---------------------------------------------------------------- synthetic probes / structured signals
    Case(
        "synthetic", "faulty", S, "GET https://auth.example.org/api/health -> HTTP/2 502 Bad Gateway in 12ms"
    ),
    Case("synthetic", "healthy", R, "GET https://auth.example.org/api/health -> HTTP/2 200 OK in 41ms"),
    Case("synthetic", "healthy", R, "login journey: 5/5 steps passed in 2.3s"),
    Case(
        "synthetic", "faulty", S, "login journey: step 3/5 'submit credentials' failed: expected 302, got 500"
    ),
    Case("synthetic", "failed", U, "probe runner error", ok=False),
    Case("metrics", "faulty", S, "", signals={"error_rate": 0.31}),
    Case("metrics", "healthy", R, "", signals={"error_rate": 0.0}),
    Case("metrics", "healthy", R, "level=ERROR but the signal decides", signals={"error_rate": "0.00"}),
    Case("metrics", "faulty", S, "", signals={"error_count": 350, "error_count_baseline": 12}),
    Case("metrics", "healthy", R, "", signals={"error_count": 13, "error_count_baseline": 12}),
    Case("metrics", "faulty", S, "", signals={"latency_ms": "2.4s", "latency_baseline_ms": 120}),
    Case("metrics", "healthy", R, "", signals={"latency_ms": 118, "latency_baseline_ms": 120}),
    Case("metrics", "faulty", S, "", signals={"restarts": 4}),
    Case("metrics", "healthy", R, "", signals={"restarts": 0, "oom_kills": 0}),
    Case("metrics", "faulty", S, "", signals={"oom_kills": 1, "restarts": 0}),
    Case("metrics", "faulty", S, "", signals={"changepoint_at": 1_700_000_120.0}, onset=ONSET),
    Case("metrics", "healthy", U, "", signals={"changepoint_at": 1_699_990_000.0}, onset=ONSET),
    Case("metrics", "healthy", R, "", signals={"anomaly_score": 0.05}),
    Case("metrics", "healthy", U, "", signals={"anomaly_score": 0.5}),
    Case("metrics", "healthy", R, "", signals={"success_rate": "99.99%", "success_rate_baseline": "99.98%"}),
    Case("metrics", "faulty", S, "", signals={"success_rate": 0.62}),
    Case("metrics", "failed", U, "error_rate: 0.9", error="prometheus: 503 Service Unavailable"),
    Case("metrics", "failed", U, "", signals={"error_rate": 0.0}, ok=False),
    Case("metrics", "failed", U, "", signals={"error_rate": 0.0}, backend_status=429),
]
