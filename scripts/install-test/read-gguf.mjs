// Copied by the install test into a folder where only @minfer/gguf is installed from the registry:
// reads a GGUF's header and prints what a tool would (architecture, tensors, first tensor's data).
//   node read-gguf.mjs MODEL.gguf
import { dequantize, readGguf, readTensorData } from "@minfer/gguf";

const model = await readGguf(process.argv[2]);
const first = model.tensors[0];
const values = dequantize(first.type, await readTensorData(model, first), first.nElements);
console.log(`architecture: ${model.metadata.architecture}`);
console.log(`tensors: ${model.tensors.length}`);
console.log(`context_length: ${model.metadata.archInteger("context_length")}`);
console.log(`${first.name}: ${values.length} values, first ${values[0].toFixed(6)}`);
