/*
 * A Java Samza job for the interop tests, run by Samza's own runner: LocalApplicationRunner with the
 * passthrough job coordinator, on Samza's Kafka system, checkpointing with Samza's
 * KafkaCheckpointManager. Its task copies each message of its input to an output stream and, on a
 * message equal to app.stop.value, commits and stops (the message itself is not copied): how a
 * test stops the job at a known offset with its checkpoint written. Samza's commit is
 * asynchronous: a commit requested while another is in progress (the one a container writes at
 * start) is skipped, and a shutdown requested with it can end the container before the checkpoint
 * is written. So the task asks for a commit at the stop message and at every window() after it,
 * and for the shutdown app.stop.delay.ms later; a message arriving in between fails the job (the
 * test produces none).
 *
 * Usage: java -cp <classes>:<Samza's classpath> SamzaCopyJob <job.properties> <timeout seconds>
 * Exit status 0 when the job finished successfully within the timeout, 1 otherwise.
 *
 * Compiled by the tests' fixture (tests/samza_interop/samza_job.py); never committed as a binary.
 */

import java.io.FileInputStream;
import java.io.InputStream;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.samza.application.ApplicationUtil;
import org.apache.samza.config.Config;
import org.apache.samza.config.MapConfig;
import org.apache.samza.context.Context;
import org.apache.samza.job.ApplicationStatus;
import org.apache.samza.runtime.LocalApplicationRunner;
import org.apache.samza.system.IncomingMessageEnvelope;
import org.apache.samza.system.OutgoingMessageEnvelope;
import org.apache.samza.system.SystemStream;
import org.apache.samza.task.InitableTask;
import org.apache.samza.task.MessageCollector;
import org.apache.samza.task.StreamTask;
import org.apache.samza.task.TaskCoordinator;
import org.apache.samza.task.WindowableTask;

public class SamzaCopyJob {

  /** Copies each message to app.output.system.app.output.stream; stops at app.stop.value. */
  public static class CopyTask implements StreamTask, InitableTask, WindowableTask {
    private SystemStream output;
    private String stopValue;
    private long stopDelayMs;
    private long stoppedAt = -1;

    @Override
    public void init(Context context) {
      Config config = context.getJobContext().getConfig();
      output = new SystemStream(config.get("app.output.system"), config.get("app.output.stream"));
      stopValue = config.get("app.stop.value");
      stopDelayMs = config.getLong("app.stop.delay.ms", 2000);
    }

    @Override
    public void process(IncomingMessageEnvelope envelope, MessageCollector collector, TaskCoordinator coordinator) {
      Object message = envelope.getMessage();
      if (stoppedAt >= 0) {
        throw new IllegalStateException("SamzaCopyJob: " + envelope.getSystemStreamPartition() + " offset "
            + envelope.getOffset() + " arrived after the stop message");
      }
      if (stopValue != null && stopValue.equals(message)) {
        System.err.println("SamzaCopyJob: " + envelope.getSystemStreamPartition() + " offset " + envelope.getOffset()
            + " is the stop message: committing and stopping");
        stoppedAt = System.currentTimeMillis();
        coordinator.commit(TaskCoordinator.RequestScope.CURRENT_TASK);
        return;
      }
      collector.send(new OutgoingMessageEnvelope(output, envelope.getKey(), message));
    }

    @Override
    public void window(MessageCollector collector, TaskCoordinator coordinator) {
      if (stoppedAt < 0) {
        return;
      }
      if (System.currentTimeMillis() - stoppedAt >= stopDelayMs) {
        coordinator.shutdown(TaskCoordinator.RequestScope.ALL_TASKS_IN_CONTAINER);
      } else {
        coordinator.commit(TaskCoordinator.RequestScope.CURRENT_TASK);
      }
    }
  }

  public static void main(String[] args) throws Exception {
    Properties properties = new Properties();
    try (InputStream in = new FileInputStream(args[0])) {
      properties.load(in);
    }
    Map<String, String> map = new HashMap<>();
    properties.stringPropertyNames().forEach(name -> map.put(name, properties.getProperty(name)));
    Config config = new MapConfig(map);
    LocalApplicationRunner runner = new LocalApplicationRunner(ApplicationUtil.fromConfig(config), config);
    runner.run(null);
    boolean finished = runner.waitForFinish(Duration.ofSeconds(Long.parseLong(args[1])));
    ApplicationStatus status = runner.status();
    System.err.println("SamzaCopyJob: finished=" + finished + " status=" + status);
    if (!finished) {
      runner.kill();
    }
    System.exit(finished && status.getStatusCode() == ApplicationStatus.StatusCode.SuccessfulFinish ? 0 : 1);
  }
}
