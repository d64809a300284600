/** In-process access to the simulator. */
export { createEtcdSim, type EtcdSim, type EtcdSimOptions } from './create.js';
