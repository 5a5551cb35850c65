"""The Prefill family (C3, C4): the page's sections on the prefill's recorded tensors: Q, K, V with their shapes, the
scores and the softmax of one head, every head's map in one grid (attention_sections.py), and the KV cache the
prefill wrote, by formula, by tensors and beside the article's example (kv_section.py)."""
