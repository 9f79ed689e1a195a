/*
 * gen_mesh.c - write a large, realistic, self-consistent mesh for benchmarking
 * `weftctl analyze`.
 *
 * Usage: bench_gen_mesh [-n SERVICES] [-s NAMESPACES] OUTDIR
 *
 * For each of SERVICES services (default 10000, spread over NAMESPACES namespaces, default
 * 100) it writes OUTDIR/<ns>/<svc>.yaml holding five documents: a Service, a Deployment, a
 * VirtualService (mesh + gateway, header match, weighted routes to two subsets, retries,
 * timeout), a DestinationRule (traffic policy, two subsets) and a Gateway (HTTP and HTTPS
 * servers on the default ingress gateway). Each namespace also gets OUTDIR/<ns>/namespace.yaml.
 * Every reference resolves (hosts, subsets, gateways), so a correct analyzer reports
 * (almost) no IST message: the run measures loading and analysis, not output. weft's own
 * analyzer does report two WFT0001 per service (the HTTPS gateway server, the grpc- port: weft
 * serves neither yet), 20,000 in all, which the run includes. Output is deterministic. Exit status:
 * 0, or 1 with a message on stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct gen_opts {
    long services, namespaces;
    const char *out;
} gen_opts;

static void write_service(FILE *f, const char *ns, const char *svc)
{
    fprintf(f,
            "apiVersion: v1\n"
            "kind: Service\n"
            "metadata:\n"
            "  name: %s\n"
            "  namespace: %s\n"
            "  labels:\n"
            "    app: %s\n"
            "    service: %s\n"
            "spec:\n"
            "  selector:\n"
            "    app: %s\n"
            "  ports:\n"
            "  - name: http\n"
            "    port: 80\n"
            "    targetPort: 8080\n"
            "    protocol: TCP\n"
            "  - name: grpc-api\n"
            "    port: 9090\n"
            "    targetPort: grpc\n",
            svc, ns, svc, svc, svc);
}

static void write_deployment(FILE *f, const char *ns, const char *svc, long i)
{
    fprintf(f,
            "---\n"
            "apiVersion: apps/v1\n"
            "kind: Deployment\n"
            "metadata:\n"
            "  name: %s-v1\n"
            "  namespace: %s\n"
            "  labels:\n"
            "    app: %s\n"
            "    version: v1\n"
            "spec:\n"
            "  replicas: %ld\n"
            "  selector:\n"
            "    matchLabels:\n"
            "      app: %s\n"
            "      version: v1\n"
            "  template:\n"
            "    metadata:\n"
            "      labels:\n"
            "        app: %s\n"
            "        version: v1\n"
            "        track: stable\n"
            "      annotations:\n"
            "        prometheus.io/scrape: \"true\"\n"
            "    spec:\n"
            "      serviceAccountName: %s\n"
            "      containers:\n"
            "      - name: app\n"
            "        image: registry.example.com/%s:1.%ld.0\n"
            "        imagePullPolicy: IfNotPresent\n"
            "        ports:\n"
            "        - containerPort: 8080\n"
            "          name: http\n"
            "        - containerPort: 9090\n"
            "          name: grpc\n"
            "        env:\n"
            "        - name: LOG_LEVEL\n"
            "          value: info\n"
            "        resources:\n"
            "          requests: {cpu: 100m, memory: 128Mi}\n"
            "          limits: {cpu: 500m, memory: 256Mi}\n"
            "        readinessProbe:\n"
            "          httpGet: {path: /healthz, port: 8080}\n"
            "          periodSeconds: 5\n",
            svc, ns, svc, 1 + i % 3, svc, svc, svc, svc, i % 20);
}

static void write_virtualservice(FILE *f, const char *ns, const char *svc)
{
    fprintf(f,
            "---\n"
            "apiVersion: networking.istio.io/v1beta1\n"
            "kind: VirtualService\n"
            "metadata:\n"
            "  name: %s\n"
            "  namespace: %s\n"
            "spec:\n"
            "  hosts:\n"
            "  - %s\n"
            "  - %s.example.com\n"
            "  gateways:\n"
            "  - mesh\n"
            "  - %s-gateway\n"
            "  http:\n"
            "  - name: canary\n"
            "    match:\n"
            "    - headers:\n"
            "        x-canary:\n"
            "          exact: \"true\"\n"
            "      uri:\n"
            "        prefix: /api\n"
            "    route:\n"
            "    - destination:\n"
            "        host: %s\n"
            "        subset: stable\n"
            "        port:\n"
            "          number: 80\n"
            "    timeout: 5s\n"
            "  - name: default\n"
            "    route:\n"
            "    - destination:\n"
            "        host: %s\n"
            "        subset: v1\n"
            "        port:\n"
            "          number: 80\n"
            "      weight: 90\n"
            "    - destination:\n"
            "        host: %s\n"
            "        subset: stable\n"
            "        port:\n"
            "          number: 80\n"
            "      weight: 10\n"
            "    retries:\n"
            "      attempts: 3\n"
            "      perTryTimeout: 2s\n"
            "      retryOn: 5xx,reset,connect-failure\n"
            "    timeout: 10s\n",
            svc, ns, svc, svc, svc, svc, svc, svc);
}

static void write_destinationrule(FILE *f, const char *ns, const char *svc)
{
    fprintf(f,
            "---\n"
            "apiVersion: networking.istio.io/v1beta1\n"
            "kind: DestinationRule\n"
            "metadata:\n"
            "  name: %s\n"
            "  namespace: %s\n"
            "spec:\n"
            "  host: %s.%s.svc.cluster.local\n"
            "  trafficPolicy:\n"
            "    connectionPool:\n"
            "      tcp:\n"
            "        maxConnections: 100\n"
            "      http:\n"
            "        http1MaxPendingRequests: 64\n"
            "        maxRequestsPerConnection: 10\n"
            "    outlierDetection:\n"
            "      consecutive5xxErrors: 5\n"
            "      interval: 30s\n"
            "      baseEjectionTime: 60s\n"
            "    loadBalancer:\n"
            "      simple: LEAST_REQUEST\n"
            "  subsets:\n"
            "  - name: v1\n"
            "    labels:\n"
            "      version: v1\n"
            "  - name: stable\n"
            "    labels:\n"
            "      track: stable\n"
            "    trafficPolicy:\n"
            "      loadBalancer:\n"
            "        simple: ROUND_ROBIN\n",
            svc, ns, svc, ns);
}

static void write_gateway(FILE *f, const char *ns, const char *svc)
{
    fprintf(f,
            "---\n"
            "apiVersion: networking.istio.io/v1beta1\n"
            "kind: Gateway\n"
            "metadata:\n"
            "  name: %s-gateway\n"
            "  namespace: %s\n"
            "spec:\n"
            "  selector:\n"
            "    istio: ingressgateway\n"
            "  servers:\n"
            "  - port:\n"
            "      number: 80\n"
            "      name: http\n"
            "      protocol: HTTP\n"
            "    hosts:\n"
            "    - %s.example.com\n"
            "  - port:\n"
            "      number: 443\n"
            "      name: https\n"
            "      protocol: HTTPS\n"
            "    hosts:\n"
            "    - %s.example.com\n"
            "    tls:\n"
            "      mode: PASSTHROUGH\n",
            svc, ns, svc, svc);
}

static int make_dir(const char *path)
{
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "bench_gen_mesh: mkdir %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

static FILE *open_out(const char *dir, const char *ns, const char *name)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s/%s.yaml", dir, ns, name);
    FILE *f = fopen(path, "w");
    if (!f)
        fprintf(stderr, "bench_gen_mesh: %s: %s\n", path, strerror(errno));
    return f;
}

static int close_out(FILE *f)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "bench_gen_mesh: write error: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

static int write_namespace(const gen_opts *o, const char *ns)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", o->out, ns);
    if (make_dir(path))
        return -1;
    FILE *f = open_out(o->out, ns, "namespace");
    if (!f)
        return -1;
    fprintf(f,
            "apiVersion: v1\n"
            "kind: Namespace\n"
            "metadata:\n"
            "  name: %s\n"
            "  labels:\n"
            "    istio-injection: enabled\n",
            ns);
    return close_out(f);
}

static int write_one(const gen_opts *o, long i)
{
    char ns[32], svc[32];
    snprintf(ns, sizeof(ns), "ns-%03ld", i % o->namespaces);
    snprintf(svc, sizeof(svc), "svc-%05ld", i);
    FILE *f = open_out(o->out, ns, svc);
    if (!f)
        return -1;
    write_service(f, ns, svc);
    write_deployment(f, ns, svc, i);
    write_virtualservice(f, ns, svc);
    write_destinationrule(f, ns, svc);
    write_gateway(f, ns, svc);
    return close_out(f);
}

static int parse_args(int argc, char **argv, gen_opts *o)
{
    o->services = 10000;
    o->namespaces = 100;
    o->out = NULL;
    for (int i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "-n") == 0 || strcmp(argv[i], "-s") == 0) && i + 1 < argc) {
            char *end;
            long v = strtol(argv[i + 1], &end, 10);
            if (*end || v < 1 || v > 10000000)
                return -1;
            *(argv[i][1] == 'n' ? &o->services : &o->namespaces) = v;
            i++;
        } else if (argv[i][0] != '-' && !o->out) {
            o->out = argv[i];
        } else {
            return -1;
        }
    }
    return o->out ? 0 : -1;
}

int main(int argc, char **argv)
{
    gen_opts o;
    if (parse_args(argc, argv, &o)) {
        fprintf(stderr, "usage: bench_gen_mesh [-n SERVICES] [-s NAMESPACES] OUTDIR\n");
        return 1;
    }
    if (o.namespaces > o.services)
        o.namespaces = o.services;
    if (make_dir(o.out))
        return 1;
    for (long n = 0; n < o.namespaces; n++) {
        char ns[32];
        snprintf(ns, sizeof(ns), "ns-%03ld", n);
        if (write_namespace(&o, ns))
            return 1;
    }
    for (long i = 0; i < o.services; i++)
        if (write_one(&o, i))
            return 1;
    return 0;
}
