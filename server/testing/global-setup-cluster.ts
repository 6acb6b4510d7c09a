import type { TestProject } from "vitest/node";
import { startTestServices } from "./global-setup.ts";

/** Project "int-cluster": the run's services plus a local Redis Cluster (3 masters + 3 replicas) for the app. */
export default function setup(project: TestProject): Promise<() => Promise<void>> {
  return startTestServices(project, { cluster: true });
}
