package dev.flinkkit.testjob;

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.time.Duration;

/**
 * A keyed, checkpointed counter for testing job lifecycle tooling against a
 * real Flink cluster (1.20 and 2.x).
 *
 * <p>A rate-limited generator emits the keys {@code key-0 .. key-(K-1)} round
 * robin at {@code --rate} events per second in total. A keyed function counts
 * the events of each key in {@link ValueState} and, after every event, writes
 * the key's count to {@code <out>/<key>.count} (a decimal number, replaced
 * atomically through a temporary file and a rename). The generator's position
 * and the counts are both operator state with fixed uids, so a job restored
 * from a savepoint or checkpoint continues counting where it left off.
 *
 * <p>The counter also adds every event to the accumulator {@code events} (a long
 * counter), which the REST API reports while the job runs and in its
 * execution result once it ended.
 *
 * <p>Program arguments:
 *
 * <pre>
 *   --out DIR                  folder for the .count files (required)
 *   --keys K                   number of keys (default 3)
 *   --rate R                   events per second, all keys together (default 50)
 *   --parallelism P            job parallelism (default: the jar run's, else parallelism.default)
 *   --checkpoint-interval MS   checkpoint interval, 0 disables checkpointing (default 1000)
 *   --fail-at N                throw when any key's count reaches N (default: never)
 *   --fail-once true           with --fail-at, fail only once per --out folder: the counter
 *                              writes <out>/.failed before it throws, and a task started when
 *                              that file exists does not throw (a restart of the job from its
 *                              state then counts on) (default false)
 *   --restart-attempts A       fixed-delay restarts before the job fails (default 0)
 *   --restart-delay MS         delay between restarts (default 200)
 *   --snapshot-delay MS        time each snapshot (checkpoint or savepoint) of the counter
 *                              takes in its synchronous part, like a large state (default 0)
 *   --record-delay MS          time the counter spends on each event, which makes it busy:
 *                              one subtask then counts at most 1000/MS events per second (default 0)
 *   --name NAME                job name (default flinkkit-counter)
 *   --records N                a bounded job: the source ends after N events in total and
 *                              the job FINISHES; 0 is unbounded (default 0)
 *   --uid-suffix S             appended to the counter's uid, so that the counter's state in a
 *                              savepoint of the job without it has no operator (default: none)
 *   --max-parallelism N        the counter's maximum parallelism, 1 to 32768 (default: Flink's,
 *                              derived from the parallelism)
 *   --label L                  named at the end of the message of a --fail-at failure (default: none)
 * </pre>
 */
public final class CounterJob {

    /** Operator uids: keep them stable so savepoints map onto resubmitted jobs. */
    public static final String SOURCE_UID = "flinkkit-key-source";
    public static final String COUNTER_UID = "flinkkit-counter";
    public static final String SINK_UID = "flinkkit-discard";

    /** The accumulator that counts the events the counter processed. */
    public static final String EVENTS_ACCUMULATOR = "events";

    /** The file in the --out folder that says a --fail-once job failed. */
    public static final String FAILED_MARKER = ".failed";

    private CounterJob() {}

    /** The program's arguments as global job parameters. */
    static final class Params extends ExecutionConfig.GlobalJobParameters {
        private static final long serialVersionUID = 1L;
        private final java.util.TreeMap<String, String> params;

        Params(java.util.Map<String, String> params) {
            this.params = new java.util.TreeMap<>(params);
        }

        @Override
        public java.util.Map<String, String> toMap() {
            return params;
        }
    }

    public static void main(String[] args) throws Exception {
        Options opts = Options.parse(args);

        Configuration conf = new Configuration();
        if (opts.restartAttempts > 0) {
            conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
            conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, opts.restartAttempts);
            conf.set(
                    RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY,
                    Duration.ofMillis(opts.restartDelayMs));
        } else {
            conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        }

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        // The program's arguments, as Flink shows them in the job's
        // configuration (user-config).
        env.getConfig().setGlobalJobParameters(new Params(opts.params));
        if (opts.parallelism > 0) {
            env.setParallelism(opts.parallelism);
        }
        if (opts.checkpointIntervalMs > 0) {
            env.enableCheckpointing(opts.checkpointIntervalMs);
        }

        DataGeneratorSource<String> source =
                new DataGeneratorSource<>(
                        new KeyGenerator(opts.keys),
                        opts.records > 0 ? opts.records : Long.MAX_VALUE,
                        RateLimiterStrategy.perSecond(opts.rate),
                        Types.STRING);

        SingleOutputStreamOperator<String> counter =
                env.fromSource(source, WatermarkStrategy.noWatermarks(), "key-source")
                        .uid(SOURCE_UID)
                        .name("key-source")
                        .keyBy(new IdentityKey())
                        .process(new CountingFunction(opts.out, opts.failAt, opts.failOnce, opts.snapshotDelayMs, opts.recordDelayMs, opts.label))
                        .uid(COUNTER_UID + opts.uidSuffix)
                        .name("counter");
        if (opts.maxParallelism > 0) {
            counter.setMaxParallelism(opts.maxParallelism);
        }
        counter.sinkTo(new DiscardingSink<>())
                .uid(SINK_UID)
                .name("discard");

        env.execute(opts.name);
    }

    /** Maps the n-th generated event to key {@code key-(n mod K)}. */
    static final class KeyGenerator implements GeneratorFunction<Long, String> {
        private static final long serialVersionUID = 1L;
        private final int keys;

        KeyGenerator(int keys) {
            this.keys = keys;
        }

        @Override
        public String map(Long n) {
            return "key-" + (n % keys);
        }
    }

    static final class IdentityKey implements KeySelector<String, String> {
        private static final long serialVersionUID = 1L;

        @Override
        public String getKey(String value) {
            return value;
        }
    }

    /**
     * Counts events per key, publishes each key's latest count as a file and,
     * with {@code --fail-at}, fails the task when a count reaches the limit.
     */
    static final class CountingFunction extends KeyedProcessFunction<String, String, String>
            implements CheckpointedFunction {
        private static final long serialVersionUID = 1L;

        private final String out;
        private final long failAt;
        private final String label; // --label: named in the failure's message
        private final boolean failOnce;
        private final long snapshotDelayMs;
        private final long recordDelayMs;

        private transient ValueState<Long> count;
        private transient Path outDir;
        private transient LongCounter events;
        private transient long failing; // failAt, or 0 once --fail-once failed before

        CountingFunction(String out, long failAt, boolean failOnce, long snapshotDelayMs, long recordDelayMs, String label) {
            this.label = label;
            this.out = out;
            this.failAt = failAt;
            this.failOnce = failOnce;
            this.snapshotDelayMs = snapshotDelayMs;
            this.recordDelayMs = recordDelayMs;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) throws Exception {
            if (snapshotDelayMs > 0) {
                Thread.sleep(snapshotDelayMs);
            }
        }

        @Override
        public void initializeState(FunctionInitializationContext context) {}

        @Override
        public void processElement(String key, Context ctx, Collector<String> collector)
                throws Exception {
            if (count == null) {
                count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
                outDir = Paths.get(out);
                Files.createDirectories(outDir);
                failing = failOnce && Files.exists(outDir.resolve(FAILED_MARKER)) ? 0 : failAt;
                events = new LongCounter();
                getRuntimeContext().addAccumulator(EVENTS_ACCUMULATOR, events);
            }
            events.add(1L);
            if (recordDelayMs > 0) {
                Thread.sleep(recordDelayMs);
            }
            Long current = count.value();
            long next = (current == null ? 0L : current) + 1;
            count.update(next);
            writeCount(key, next);
            if (failing > 0 && next >= failing) {
                if (failOnce) {
                    Files.write(outDir.resolve(FAILED_MARKER), new byte[0]);
                }
                throw new IllegalStateException(
                        "flinkkit test job: "
                                + key
                                + " reached count "
                                + next
                                + " (--fail-at "
                                + failAt
                                + ")"
                                + (label.isEmpty() ? "" : " label " + label));
            }
            collector.collect(key + "=" + next);
        }

        private void writeCount(String key, long value) throws IOException {
            Path tmp = Files.createTempFile(outDir, "." + key + ".", ".tmp");
            try {
                Files.write(tmp, Long.toString(value).getBytes(StandardCharsets.US_ASCII));
                Files.move(
                        tmp,
                        outDir.resolve(key + ".count"),
                        StandardCopyOption.ATOMIC_MOVE,
                        StandardCopyOption.REPLACE_EXISTING);
            } finally {
                Files.deleteIfExists(tmp);
            }
        }
    }

    /** Hand-parsed program arguments (no Flink utility is common to 1.20 and 2.x). */
    static final class Options {
        String out;
        int keys = 3;
        double rate = 50;
        int parallelism = 0; // not set: the jar run's, else parallelism.default
        long checkpointIntervalMs = 1000;
        long failAt = 0;
        boolean failOnce = false;
        int restartAttempts = 0;
        long restartDelayMs = 200;
        long snapshotDelayMs = 0;
        long recordDelayMs = 0;
        String name = "flinkkit-counter";
        long records = 0; // unbounded
        String uidSuffix = "";
        String label = ""; // named in the message of a --fail-at failure
        int maxParallelism = 0; // not set: Flink's default

        /** Every flag and its value, without the leading dashes. */
        final java.util.Map<String, String> params = new java.util.TreeMap<>();

        static Options parse(String[] args) {
            Options o = new Options();
            for (int i = 0; i < args.length; i++) {
                String flag = args[i];
                String value;
                int eq = flag.indexOf('=');
                if (flag.startsWith("--") && eq > 0) {
                    value = flag.substring(eq + 1);
                    flag = flag.substring(0, eq);
                } else {
                    if (i + 1 >= args.length) {
                        throw new IllegalArgumentException("missing value for " + flag);
                    }
                    value = args[++i];
                }
                if (flag.startsWith("--")) {
                    o.params.put(flag.substring(2), value);
                }
                switch (flag) {
                    case "--out":
                        o.out = value;
                        break;
                    case "--keys":
                        o.keys = positiveInt(flag, value);
                        break;
                    case "--rate":
                        o.rate = Double.parseDouble(value);
                        if (!(o.rate > 0)) {
                            throw new IllegalArgumentException("--rate must be > 0: " + value);
                        }
                        break;
                    case "--parallelism":
                        o.parallelism = positiveInt(flag, value);
                        break;
                    case "--checkpoint-interval":
                        o.checkpointIntervalMs = nonNegativeLong(flag, value);
                        break;
                    case "--fail-at":
                        o.failAt = nonNegativeLong(flag, value);
                        break;
                    case "--fail-once":
                        if (!value.equals("true") && !value.equals("false")) {
                            throw new IllegalArgumentException("--fail-once must be true or false: " + value);
                        }
                        o.failOnce = value.equals("true");
                        break;
                    case "--restart-attempts":
                        o.restartAttempts = (int) nonNegativeLong(flag, value);
                        break;
                    case "--restart-delay":
                        o.restartDelayMs = nonNegativeLong(flag, value);
                        break;
                    case "--snapshot-delay":
                        o.snapshotDelayMs = nonNegativeLong(flag, value);
                        break;
                    case "--records":
                        o.records = nonNegativeLong(flag, value);
                        break;
                    case "--record-delay":
                        o.recordDelayMs = nonNegativeLong(flag, value);
                        break;
                    case "--name":
                        o.name = value;
                        break;
                    case "--label":
                        o.label = value;
                        break;
                    case "--uid-suffix":
                        o.uidSuffix = value;
                        break;
                    case "--max-parallelism":
                        o.maxParallelism = positiveInt(flag, value);
                        if (o.maxParallelism > 32768) {
                            throw new IllegalArgumentException("--max-parallelism must be at most 32768: " + value);
                        }
                        break;
                    default:
                        throw new IllegalArgumentException("unknown argument: " + flag);
                }
            }
            if (o.out == null || o.out.isEmpty()) {
                throw new IllegalArgumentException("--out DIR is required");
            }
            return o;
        }

        private static int positiveInt(String flag, String value) {
            int v = Integer.parseInt(value);
            if (v <= 0) {
                throw new IllegalArgumentException(flag + " must be > 0: " + value);
            }
            return v;
        }

        private static long nonNegativeLong(String flag, String value) {
            long v = Long.parseLong(value);
            if (v < 0) {
                throw new IllegalArgumentException(flag + " must be >= 0: " + value);
            }
            return v;
        }
    }
}
