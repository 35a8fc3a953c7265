"""kube"""
