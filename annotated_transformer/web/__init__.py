"""Translation in a web page: the ONNX export with its onnxruntime check, and onnxruntime-web's
runtime for chapter 08's live page."""
